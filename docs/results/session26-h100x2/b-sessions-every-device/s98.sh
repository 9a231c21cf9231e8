set -uo pipefail
# (The machine lent for this call was two H100s + 32 cores: see machine.txt.)
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, eighth call, two GPUs + 32 cores: why a session over the CPU and both GPUs left
# one GPU idle (NBody, Jacobi in s97): each launch's packages, from RUST_LOG=hetdsl=debug.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s98.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in nbody jacobi; do
  RUST_LOG=hetdsl=debug timeout 120 .device/bin/iterate $b --size large --steps 4 --devices all --variants session > $o/$b.txt 2> $o/$b.log
  echo "$b rc $? at $(el) s"; grep -E "split|speedup|kernels per" $o/$b.txt | cut -c1-160
  sed 's/\x1b\[[0-9;]*m//g' $o/$b.log | grep -E "handed out|completed" | head -60 | cut -c1-220
  gzip -9 $o/$b.log; pack
done
