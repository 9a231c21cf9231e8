set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 23, call 4 on the two-GPU + 32-core CPU machine: Binomial alone, 20 timed calls,
# CMA, 1d526a4 then 0b0ef07 then 1d526a4: do plans hold over many calls?
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
swap() { mv .device/mpi .device/mpi-x && mv .device/mpi-0b0ef07 .device/mpi && mv .device/mpi-x .device/mpi-0b0ef07; }
cmp() {
  local d=$o/$1; mkdir -p $d
  OUT=$d timeout 60 bash scripts/mpi-run.sh compare 2 --scale 8 --reps 20 --kernels binomial > $d/mpi.log 2>&1; echo "$1 rc $? at $(el) s"
  grep -E "^\| [a-z]" $d/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
  grep -E "binomial call [0-9]" $d/mpi-compare.txt | grep -c fresh
  tar czf $OUT/s80.tgz -C /tmp r
}
cmp bin20-new-1; swap; cmp bin20-start; swap; cmp bin20-new-2
