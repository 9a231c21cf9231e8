set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
$b/devices > $o/devices.txt 2>&1
timeout 250 env RUST_LOG=hetdsl=info $b/suite --size paper --balancers default,sigmoid --devices all --reps 3 --settle 4 --energy off --kernels aho,nbody,reduction,matvec,stencil3d,saxpy,elementwise,binomial --json $o/suite.json > $o/suite.txt 2> $o/suite.err
echo rc $?
grep -v "^-" $o/suite.txt | head -80
grep -c "back-up" $o/suite.err
