set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 6 on 2xH200 + 32-core CPU (binaries of 1724c46: packages staged through a ring
# of pinned slots): saxpy 2^28 on every device, sessions on the two GPUs, then the one-shot suite
# at paper size with the default balancer (every device, and the GPUs only), each kernel's first
# call included.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/x2; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
HETDSL_DEVICES=all timeout 40 $b/saxpy 268435456 --calls 5 > $o/saxpy-all.txt 2>&1; echo "saxpy rc $?"
grep "^call" $o/saxpy-all.txt | sed 's/, set-up.*//'
timeout 100 $b/iterate all --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/iterate-gpu-submit.json > $o/sessions.txt 2>&1; echo "iterate rc $? at $(( $(date +%s) - T0 )) s"
grep -E "^==|^single|^session" $o/sessions.txt | cut -c1-140
left=$(( 570 - ($(date +%s) - T0) ))
echo "suite limit $left s"
RUST_LOG=hetdsl=debug timeout $left $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2> $o/paper.err
echo "suite rc $?"
sed 's/\x1b\[[0-9;]*m//g' $o/paper.err | grep -E "device set-up|run ended" > $o/paper.phases; rm -f $o/paper.err
grep -E "first call|^(all|gpu) +[a-z0-9]+ +default" $o/paper.txt
tar czf $OUT/s42.tgz -C $OUT r && rm -rf $o
