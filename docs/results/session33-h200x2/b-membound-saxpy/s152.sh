set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 33, call 2 on two H200s + 32 cores (binaries of bfadce5): NBody 2^21 as a session,
# saxpy 2^28's wall time on every device / the GPUs / one H200, then the memory-bound kernels on
# every device, default against static.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s152.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; exit 0; fi
timeout 120 $b/iterate nbody --size 2097152 --budget 6 --devices gpu --variants single,session --submit --json $o/nbody-2m.json > $o/nbody-2m.txt 2>&1
echo "nbody 2^21 rc $? at $(el) s"; grep -E "^==|^single|^session|speedup|moved|beyond" $o/nbody-2m.txt | cut -c1-150; pack
for s in all gpu 1; do
  HETDSL_DEVICES=$s timeout 30 $b/saxpy 268435456 --calls 5 > $o/saxpy-$s.txt 2>&1; echo "saxpy $s rc $? at $(el) s"
  grep "^call" $o/saxpy-$s.txt | sed 's/, set-up.*//'
done; pack
left=$(( 570 - $(el) )); echo "membound limit $left s"
timeout $left $b/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"; grep -E "first call|^[a-z0-9]+ +(alone/one|alone/def|default|static)" $o/membound.txt | cut -c1-130
gzip -9 $o/*.json; pack
