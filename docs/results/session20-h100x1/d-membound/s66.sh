set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 20, call 4 on one H100 + 16 cores: the memory-bound kernels co-executed with the
# default balancer against the best device alone (the 1.02 line), binaries of 7599332.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 200 .device/s20/suite-new --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1; echo "membound rc $? at $(( $(date +%s) - T0 )) s"
grep -vE "settling|alone~" $o/membound.txt | head -40
tar czf $OUT/s66.tgz -C $OUT r && rm -rf $o
