set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 14, call 3 on 1xH200 + 16-core CPU (working tree after 47459f0: plans from kernel time): the session loops on the H200 alone
# and on the H200 with the CPU (moves between them go through the new pinned pool).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 200 $b/iterate all --size large --budget 8 --devices 0,1 --variants single,session --submit --json $o/iterate-all.json > $o/iterate-all.txt 2>&1
echo rc $?
grep -E "^==|^single|^session|speedup|kernels per step" $o/iterate-all.txt | cut -c1-160
