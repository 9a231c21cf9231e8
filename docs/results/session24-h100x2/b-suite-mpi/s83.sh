set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 24, call 2, the two-GPU + 32-core machine: build b8f59d2 (irregular cost map by
# device times; pieces of 1/8, 3/8, 3/8, 1/8) on the whole one-process suite, every device and
# GPUs only; then two MPI ranks against one process with the same build (CMA).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
RUST_LOG=hetdsl=debug timeout 370 .device/s25/suite-ab --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2> $o/paper.err
echo "suite rc $? at $(el) s"
sed 's/\x1b\[[0-9;]*m//g' $o/paper.err | grep -E "device set-up|run ended" > $o/paper.phases; rm -f $o/paper.err
grep -E "^(all|gpu) +[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
tar czf $OUT/s83.tgz -C /tmp r
left=$(( 583 - $(el) )); echo "mpi limit $left s"
d=$o/mpi; mkdir -p $d
OUT=$d timeout $left bash scripts/mpi-run.sh compare 2 --scale 8 --reps 8 > $d/mpi.log 2>&1; echo "mpi rc $? at $(el) s"
grep -E "^\| [a-z]" $d/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
tar czf $OUT/s83.tgz -C /tmp r
