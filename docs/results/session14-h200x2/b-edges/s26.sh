set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 14, call 2 on 2xH200 + 32-core CPU: queued launches with edges first, moves waiting
# for the package that wrote them, pinned staging for moves (working tree after 46917b9).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT; t0=$SECONDS
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
it=$b/iterate
{
timeout 40 $it jacobi --size large --devices 1 --variants single,opencl3 --submit
timeout 90 $it all --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/iterate-gpu-submit.json
timeout 50 $it nbody --size 524288 --steps 50 --budget 30 --devices 1,2 --variants session --submit
timeout 40 $it jacobi --size large --budget 8 --devices 1,2 --variants session --submit
timeout 60 $it all --size large --budget 8 --devices all --variants session --submit
} > $o/sessions.txt 2>&1
echo "sessions done at $((SECONDS-t0)) s"
left=$(( 500 - (SECONDS - t0) ))
echo "suite limit $left s"
timeout $left $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels mandelbrot,nbody,rap,ray1 --json $o/paper.json > $o/paper.txt 2>&1
echo rc $?
grep -E "ms per|speedup|WRONG|==|^single|^session|^opencl3" $o/sessions.txt | cut -c1-150 | head -60
grep -E "alone: | default |SKIP|first call|settle" $o/paper.txt | head -60
