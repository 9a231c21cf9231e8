set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 18, call 1 on one GPU + 16-core CPU: (1) a first call's set-up before (s17 = binaries
# of session 17's end) and after ed758d5 (input ring on 8 MiB slots at set-up, grown while the
# first kernel runs), alternated, with the set-up phases logged; (2) every kernel with the
# default balancer against the honest baseline (new binaries), medians of 3 after 3 settling calls.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
K=binomial,gaussian,bm3d,stencil3d,saxpy
for round in 1 2; do
  for v in s17 s18; do
    RUST_LOG="hetdsl::engine::worker=debug,hetdsl::engine::run=debug" timeout 90 .device/$v/suite --size paper --balancers default --devices all --reps 1 --settle 0 --energy off --kernels $K --json $o/first-$v-$round.json > $o/first-$v-$round.txt 2> $o/first-$v-$round.phases
    echo "first $v round $round rc $? at $(el) s"; grep "first call" $o/first-$v-$round.txt | cut -c1-110
  done
done
left=$(( 585 - $(el) )); echo "suite limit $left s"
timeout $left .device/s18/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/final.json > $o/final.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|timed|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/final.txt | cut -c1-130
gzip -9 $o/final.json $o/*.phases
tar czf $OUT/s52.tgz -C $OUT r && rm -rf $o
