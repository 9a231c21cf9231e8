set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 14, call 1 on 2xH200 + 32-core CPU (binaries of 46917b9): sessions before any change,
# then the one-shot suite with the default balancer (every device, and the GPUs only).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT; t0=$SECONDS
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
it=$b/iterate
{
timeout 40 $it jacobi --size large --devices 1 --variants single,opencl3 --submit
timeout 90 $it all --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/iterate-gpu-submit.json
timeout 60 $it nbody --size 524288 --steps 50 --budget 30 --devices 1,2 --variants single,session --submit
} > $o/sessions.txt 2>&1
echo "sessions done at $((SECONDS-t0)) s"
timeout 30 env HETDSL_DEVICES=all $b/saxpy 268435456 --calls 5 > $o/saxpy-all.txt 2>&1
timeout 70 $b/suite --size paper --kernels saxpy,elementwise,reduction,matvec --balancers default,static --devices all --reps 3 --energy off --json $o/membound.json > $o/membound.txt 2>&1
left=$(( 565 - (SECONDS - t0) ))
echo "paper suite limit $left s"
timeout $left $b/suite --size paper --balancers default --devices all/gpu --reps 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo rc $?
grep -E "ms per|speedup|WRONG|correct|==" $o/sessions.txt | head -60
grep "^call" $o/saxpy-all.txt | sed 's/, set-up.*//'
grep -E "alone: | default | static |SKIP|first call" $o/membound.txt $o/paper.txt
