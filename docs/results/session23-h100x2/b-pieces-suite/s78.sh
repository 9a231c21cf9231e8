set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 23, call 2 on the two-GPU + 32-core CPU machine, binaries of 0b0ef07.
# (1) MPI Binomial: rank 0's one range ran 14 ms longer than its GPU was busy (one package:
#     inputs copied and written before the kernel, outputs read after). A node runs a cut range
#     in pieces only where each computes >= 0.1 s; try 0.05, 0.03 and 0.02 (two rounds, CMA).
# (2) The one-process suite at paper size, every device and the GPUs only (not run since
#     session 20; the engine gained argument windows since).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for round in 1 2; do
  for p in def 0.05 0.03 0.02; do
    d=$o/bin-$p-$round; mkdir -p $d
    extra=""; [ $p != def ] && extra="--piece-min $p"
    OUT=$d timeout 60 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 10 --kernels binomial $extra > $d/mpi.log 2>&1; echo "binomial $p round $round rc $? at $(el) s"
    grep -E "^\| binomial" $d/mpi-compare.txt 2>/dev/null | cut -d'|' -f4,6,8,9,10
    grep -E "binomial call [0-9]" $d/mpi-compare.txt | tail -4 | cut -c1-170
  done
done
tar czf $OUT/s78.tgz -C /tmp r
left=$(( 585 - $(el) )); echo "suite limit $left s"
RUST_LOG=hetdsl=debug timeout $left .device/s23/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2> $o/paper.err
echo "suite rc $? at $(el) s"
sed 's/\x1b\[[0-9;]*m//g' $o/paper.err | grep -E "device set-up|run ended" > $o/paper.phases; rm -f $o/paper.err
grep -E "first call|calls|^(all|gpu) +[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
tar czf $OUT/s78.tgz -C /tmp r
