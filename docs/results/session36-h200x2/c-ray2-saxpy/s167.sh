set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 36, call 3, two H200s + 32 cores (binaries of c5e10df): Ray2 on every device (cut in
# calls 1-2), then saxpy 2^28 end to end on one H200, the two GPUs and every device.
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s167.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
timeout 220 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels ray2 --json $o/ray2.json > $o/ray2.txt 2>&1
echo "ray2 rc $? at $(el) s"; grep -E "first call|settling|^[a-z0-9]+ +(alone|default)" $o/ray2.txt | cut -c1-150
pack
for d in 1 gpu all; do
  HETDSL_DEVICES=$d timeout 60 $b/saxpy 268435456 --calls 5 > $o/saxpy-$d.txt 2>&1
  echo "saxpy $d rc $? at $(el) s"; grep -iE "GB/s|run\(\)" $o/saxpy-$d.txt | tail -6 | cut -c1-160
done
gzip -9 $o/*.json 2>/dev/null; pack
