set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 34, call 3, one H200 + 16-core CPU (binary of 65fe4b7): the six samples' new checks
# (every element, or one element of every work-group drawn afresh) on real GPU output at paper
# size, each kernel timed on its own; then stencil3d, 11 rounds alternated with the H200 alone.
if ! nvidia-smi -L | grep -q H200; then echo "NOT an H200: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for k in taylor binomial aho bm3d mandelbrot ray1 ray2; do
  s=$(date +%s%N)
  timeout 120 $b/suite-new --size paper --balancers default --devices all --reps 1 --settle 0 --energy off --kernels $k --json $o/$k.json > $o/$k.txt 2>&1
  rc=$?; echo "$k rc $rc, $(( ($(date +%s%N) - s) / 1000000 )) ms, at $(el) s"
  grep -E "^$k +(alone/one|alone/def|default)|correct|excused|mismatch|FAIL|wrong" $o/$k.txt | cut -c1-200 | head -8
  gzip -9 $o/$k.json; tar czf $OUT/s160.tgz -C /tmp r
done
timeout 100 $b/suite-new --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels stencil3d --json $o/stencil3d.json > $o/stencil3d.txt 2>&1
echo "stencil3d rc $? at $(el) s"
grep -E "settling|rounds alternated|timed calls|^stencil3d +(alone/one|alone/def|default)" $o/stencil3d.txt | cut -c1-400
gzip -9 $o/stencil3d.json; tar czf $OUT/s160.tgz -C /tmp r
