set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 20, call 5 on the two-GPU + 32-core CPU machine: a node's pieces of a cut range of at
# least 0.1 s (the default) against 0.05 s, Binomial and Mandelbrot, two ranks.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for v in 0.1 0.05; do
  mkdir -p $o/piece-$v
  OUT=$o/piece-$v timeout 150 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial,mandelbrot --piece-min $v > $o/piece-$v/mpi.log 2>&1; echo "piece-min $v rc $? at $(( $(date +%s) - T0 )) s"
  grep -E "^\| [a-z]" $o/piece-$v/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
  grep -E "call [0-9]" $o/piece-$v/mpi-compare.txt 2>/dev/null | cut -c1-150
done
tar czf $OUT/s67.tgz -C $OUT r && rm -rf $o
