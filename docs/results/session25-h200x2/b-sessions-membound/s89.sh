set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 25, third call, asked for two H200s + 32 cores (binaries of 0b69880, .device/bin):
# the iterative benchmarks per step on the GPUs against the best GPU alone (and Jacobi's
# hand-written opencl3 loop), NBody at 2^21 bodies, saxpy 2^28's wall time, then the
# memory-bound kernels on every device, default against static.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s89.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 150 $b/iterate all --size large --budget 8 --devices gpu --variants single,session,opencl3 --submit --json $o/iterate.json > $o/sessions.txt 2>&1
echo "iterate rc $? at $(el) s"; grep -E "^==|^single|^session|^opencl3|speedup|moved" $o/sessions.txt | cut -c1-150; pack
timeout 150 $b/iterate nbody --size 2097152 --budget 6 --devices gpu --variants single,session --submit --json $o/nbody-2m.json > $o/nbody-2m.txt 2>&1
echo "nbody 2^21 rc $? at $(el) s"; grep -E "^==|^single|^session|speedup|moved" $o/nbody-2m.txt | cut -c1-150; pack
for s in all gpu 1; do
  HETDSL_DEVICES=$s timeout 30 $b/saxpy 268435456 --calls 5 > $o/saxpy-$s.txt 2>&1; echo "saxpy $s rc $? at $(el) s"
  grep "^call" $o/saxpy-$s.txt | sed 's/, set-up.*//'
done; pack
left=$(( 560 - $(el) )); echo "membound limit $left s"
timeout $left $b/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"; grep -E "first call|^[a-z0-9]+ +(alone/one|alone/def|default|static)" $o/membound.txt | cut -c1-130
gzip -9 $o/*.json; pack
