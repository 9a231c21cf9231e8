set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Prepared in session 24 for the next call on the two-GPU + 32-core machine. One-process suite,
# GPUs only, Mandelbrot and Ray1: 8ed9e25 (a block whose cost falls runs its pieces from its
# end; .device/s26/suite) against 81c4b70 (session 24's last measured logic, build c;
# .device/s25/suite-c), interleaved; then 8ed9e25 on the whole suite, GPUs only.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
declare -A bin=([c]=.device/s25/suite-c [d]=.device/s26/suite)
for n in d-1 c-1 d-2 c-2; do
  b=${n%-*}
  timeout 85 ${bin[$b]} --size paper --balancers default --devices gpu --reps 5 --settle 3 --energy off --kernels mandelbrot,ray1 --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s"
  grep -E "^(mandelbrot|ray1) +default" $o/$n.txt | cut -c1-130
  tar czf $OUT/s86.tgz -C /tmp r
done
left=$(( 585 - $(el) )); echo "suite limit $left s"
timeout $left .device/s26/suite --size paper --balancers default --devices gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "^[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
tar czf $OUT/s86.tgz -C /tmp r
