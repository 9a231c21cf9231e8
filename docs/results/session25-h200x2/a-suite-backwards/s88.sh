set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 25, asked for two H200s + 32 cores. On H100s: .device/s86.sh (a block whose cost falls
# runs its pieces from its end, 8ed9e25 in .device/s26, against 8c3cd18 in .device/s25/suite-c,
# interleaved; then the whole suite on the GPUs). On H200s, the machine the targets name: the
# whole suite on every device and on the GPUs first (0b69880, .device/bin), then that A/B.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
if ! nvidia-smi -L | grep -q H200; then bash .device/s86.sh; exit; fi
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 340 .device/bin/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
gzip -9 $o/paper.json; tar czf $OUT/s88.tgz -C /tmp r
declare -A bin=([c]=.device/s25/suite-c [d]=.device/s26/suite)
for n in d-1 c-1 d-2 c-2; do
  b=${n%-*}
  [ $(( 585 - $(el) )) -lt 75 ] && break
  timeout 70 ${bin[$b]} --size paper --balancers default --devices gpu --reps 5 --settle 3 --energy off --kernels mandelbrot,ray1 --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s"
  grep -E "^(mandelbrot|ray1) +default" $o/$n.txt | cut -c1-130
  tar czf $OUT/s88.tgz -C /tmp r
done
