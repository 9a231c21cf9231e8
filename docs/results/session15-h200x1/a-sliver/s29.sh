set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 15, 1xH200 + 16-core CPU: sessions over the CPU and the H200 before (1c77d2d) and after
# (0f5f95c: a resident relaunch plan drops a device whose planned block is a sliver), the H200
# alone as the baseline, and the host/driver copy rates (copyrate, with the driver's pageable rows).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
run() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" --json $o/$name.json > $o/$name.txt 2>&1; echo "$name rc $? $(( $(date +%s) - t0 )) s"; grep -E "^==|^single|^session|speedup|split by" $o/$name.txt | cut -c1-170; }
run gpu-alone $b/iterate all --size large --budget 8 --devices 1 --variants single --submit
run after $b/iterate all --size large --budget 8 --devices 0,1 --variants session --submit
run before $b/iterate-before all --size large --budget 8 --devices 0,1 --variants session --submit
run after2 $b/iterate all --size large --budget 8 --devices 0,1 --variants session --submit
run gpu-alone2 $b/iterate blackscholes --size large --budget 8 --devices 1 --variants single --submit
timeout 90 $b/copyrate 1024 --reps 3 > $o/copyrate.txt 2>&1; echo "copyrate rc $?"; cat $o/copyrate.txt
