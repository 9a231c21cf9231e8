set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
timeout 200 env RUST_LOG=hetdsl=debug $b/suite --size paper --balancers default,sigmoid --devices all --reps 3 --settle 2 --energy off --kernels aho,binomial --json $o/suite.json > $o/suite.txt 2> $o/suite.err
echo rc $?
zcat -f $o/suite.err | grep -c "quarantined"
gzip $o/suite.err
grep -E "alone: | default | sigmoid |SKIP|first call" $o/suite.txt
