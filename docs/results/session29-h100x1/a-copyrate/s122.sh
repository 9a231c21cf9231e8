set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 3: does the driver move the caller's own memory at DMA speed once it is
# wrapped in a USE_HOST_PTR buffer (copyrate's new rows)? And saxpy end to end as it stands.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s122.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 200 .device/t/copyrate 1024 --reps 5 > $o/copyrate.txt 2>&1; echo "copyrate rc $? at $(el) s"; cat $o/copyrate.txt; pack
for d in 1 gpu all; do
  HETDSL_DEVICES=$d timeout 100 .device/t/saxpy 268435456 --calls 5 > $o/saxpy-$d.txt 2>&1; echo "saxpy $d rc $? at $(el) s"; grep -iE "GB/s|error" $o/saxpy-$d.txt | tail -6
done
pack
