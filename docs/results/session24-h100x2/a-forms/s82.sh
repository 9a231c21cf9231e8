set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 24, call 1, the two-GPU + 32-core machine. One-process suite, GPUs only, Mandelbrot
# and Ray1 (under 0.97 in session 23), three builds interleaved, two rounds:
#   head = fbd73d5 (session 23's final), a = irregular cost map by device times,
#   ab = a + pieces of 1/8, 3/8, 3/8, 1/8.
# Then build ab on the whole suite, every device and GPUs only, as time allows.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
declare -A bin=([head]=.device/s24/suite [a]=.device/s25/suite-a [ab]=.device/s25/suite-ab)
for round in 1 2; do
  for b in head a ab; do
    n=$b-$round
    timeout 90 ${bin[$b]} --size paper --balancers default --devices gpu --reps 5 --settle 3 --energy off --kernels mandelbrot,ray1 --json $o/$n.json > $o/$n.txt 2>&1
    echo "$n rc $? at $(el) s"
    grep -E "^gpu +[a-z0-9]+ +default" $o/$n.txt | cut -c1-130
    tar czf $OUT/s82.tgz -C /tmp r
  done
done
left=$(( 585 - $(el) )); echo "suite limit $left s"
timeout $left .device/s25/suite-ab --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "^(all|gpu) +[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
tar czf $OUT/s82.tgz -C /tmp r
