set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
$b/devices > $o/devices.txt 2>&1
timeout 60 env HETDSL_DEVICES=1 $b/saxpy 268435456 --calls 3 --json $o/saxpy-gpu.json > $o/saxpy-gpu.txt 2>&1
timeout 60 env HETDSL_DEVICES=1 $b/saxpy 67108864 --balancer dynamic:512 --calls 3 > $o/saxpy-dyn512.txt 2>&1
timeout 420 $b/suite --size paper --balancers default,sigmoid --devices all --reps 3 --energy off --json $o/suite.json > $o/suite.txt 2>&1
echo rc $?
tail -3 $o/saxpy-gpu.txt $o/saxpy-dyn512.txt
grep -v "^-" $o/suite.txt | head -80
