set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 17, call 2 on the two-GPU + 32-core CPU machine (binaries of the session's end of
# engine work): (1) Jacobi sessions on the two GPUs, moves written on a queue of their own
# (after) against the compute queue (before, 8f0e900), alternated twice, the idle gaps from the
# debug events; (2) the one-shot suite at paper size, the default balancer, every device and the
# GPUs only, each timed call's form printed.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/s17; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for r in 1 2; do
  for v in before after; do
    RUST_LOG=hetdsl=debug timeout 60 $b/iterate-$v jacobi --size large --budget 8 --devices 1,2 --variants single,session --submit --json $o/jac-$v$r.json > $o/jac-$v$r.txt 2> $o/jac-$v$r.err
    echo "jacobi $v$r rc $? at $(el) s"
    grep -E "^single|^session " $o/jac-$v$r.txt | cut -c1-100; grep -E "speedup|split by" $o/jac-$v$r.txt
    bash scripts/queued-gaps.sh $o/jac-$v$r.err > $o/jac-$v$r.gaps 2>&1; cat $o/jac-$v$r.gaps; rm -f $o/jac-$v$r.err
  done
done
left=$(( 590 - $(el) )); echo "suite limit $left s"
RUST_LOG=hetdsl=debug timeout $left $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2> $o/paper.err
echo "suite rc $? at $(el) s"
sed 's/\x1b\[[0-9;]*m//g' $o/paper.err | grep -E "device set-up|run ended" > $o/paper.phases; rm -f $o/paper.err
grep -E "first call|calls|^(all|gpu) +[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
tar czf $OUT/s49.tgz -C $OUT r && rm -rf $o
