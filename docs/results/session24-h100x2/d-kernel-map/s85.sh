set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 24, call 4: GPUs only, Mandelbrot and Ray1: c (an irregular kernel's cost map is its
# kernel times only, not device transfer times) against ab, interleaved c, ab, c.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
declare -A bin=([ab]=.device/s25/suite-ab [c]=.device/s25/suite-c)
for n in c-1 ab-1 c-2; do
  b=${n%-*}
  timeout 85 ${bin[$b]} --size paper --balancers default --devices gpu --reps 5 --settle 3 --energy off --kernels mandelbrot,ray1 --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s"
  grep -E "^(mandelbrot|ray1) +default" $o/$n.txt | cut -c1-130
  tar czf $OUT/s85.tgz -C /tmp r
done
