set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 23, call 3 on the two-GPU + 32-core CPU machine: MPI, two ranks against one process,
# CMA. (1) 1d526a4: node pieces from 0.05 s, plans not struck by one noisy call, a whole
# range's wait teaches the next plan; (2) 0b0ef07 (start of the session), same machine;
# (3) Binomial alone, reps 10: 1d526a4, 0b0ef07, 1d526a4.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
swap() { mv .device/mpi .device/mpi-x && mv .device/mpi-0b0ef07 .device/mpi && mv .device/mpi-x .device/mpi-0b0ef07; }
cmp() { # name timeout args...
  local d=$o/$1 t=$2; shift 2; mkdir -p $d
  OUT=$d timeout $t bash scripts/mpi-run.sh compare 2 --scale 8 "$@" > $d/mpi.log 2>&1; echo "$(basename $d) rc $? at $(el) s"
  grep -E "^\| [a-z]" $d/mpi-compare.txt 2>/dev/null | cut -d'|' -f2,4,6,8,9,10
  tar czf $OUT/s79.tgz -C /tmp r
}
cmp new 230 --reps 8
swap; cmp start 230 --reps 8; swap
cmp bin-new-1 60 --reps 10 --kernels binomial
swap; cmp bin-start 60 --reps 10 --kernels binomial; swap
cmp bin-new-2 60 --reps 10 --kernels binomial
