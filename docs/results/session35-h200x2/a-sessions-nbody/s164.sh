set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 35, call 2, two H200s + 32 cores (binaries of 7b358c1, .device/bin2): the iterative
# benchmarks on the two GPUs, then NBody on the two GPUs and NBody's waves on each H200.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s164.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; exit 0; fi
timeout 300 $b/iterate all --size large --budget 6 --devices gpu --variants single,session,opencl3 --submit --json $o/iterate.json > $o/sessions.txt 2>&1
echo "iterate rc $? at $(el) s"; grep -E "^==|^single|^session|^opencl3|speedup|moved|beyond|effic" $o/sessions.txt | cut -c1-170
gzip -9 $o/*.json; pack
timeout 100 $b/suite --size paper --balancers default --devices gpu --reps 3 --settle 3 --energy off --kernels nbody --json $o/nbody-gpu.json > $o/nbody-gpu.txt 2>&1
echo "suite rc $? at $(el) s"; grep -E "first call|settling|timed|^[a-z0-9]+ +(alone|default)" $o/nbody-gpu.txt | cut -c1-160
gzip -9 $o/*.json; pack
for d in 1 2; do
  left=$(( 560 - $(el) )); [ $left -lt 30 ] && break
  timeout $left $b/waves --kernels nbody --device $d --size paper --reps 3 --fills 1,2,2.67 --pieces 2 --json $o/waves-nbody-$d.json > $o/waves-nbody-$d.txt 2>&1
  echo "waves $d rc $? at $(el) s"; cat $o/waves-nbody-$d.txt
done
gzip -9 $o/*.json; pack
