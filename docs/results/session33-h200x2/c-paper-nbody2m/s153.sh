set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 33, call 3 on two H200s + 32 cores (binaries of bfadce5): the papers' kernels call 1
# did not reach in its time, then NBody 2^21 as a session with a longer limit.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s153.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; exit 0; fi
timeout 300 $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels bm3d,ray1,ray2 --json $o/paper2.json > $o/paper2.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +default|geomean|balance" $o/paper2.txt | cut -c1-160
gzip -9 $o/paper2.json; pack
left=$(( 580 - $(el) )); echo "nbody limit $left s"
timeout $left $b/iterate nbody --size 2097152 --budget 4 --devices gpu --variants single,session --submit --json $o/nbody-2m.json > $o/nbody-2m.txt 2>&1
echo "nbody 2^21 rc $? at $(el) s"; grep -E "^==|^single|^session|speedup|moved|beyond" $o/nbody-2m.txt | cut -c1-150
gzip -9 $o/*.json; pack
