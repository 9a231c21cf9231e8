set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 18, call 6 on the two-GPU + 32-core CPU machine: NBody 2^21 as a session on the two
# GPUs against each GPU alone (binaries of b9abddf; the engine is session 17's).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
n=2097152
timeout 200 .device/s18/iterate nbody --size $n --budget 6 --devices 1,2 --variants single,session --submit --json $o/nbody-$n.json > $o/nbody-$n.txt 2>&1
echo "nbody rc $? at $(( $(date +%s) - T0 )) s"; grep -E "^(single|session)|split|per step|speedup" $o/nbody-$n.txt | cut -c1-200
tar czf $OUT/s57.tgz -C $OUT r && rm -rf $o
