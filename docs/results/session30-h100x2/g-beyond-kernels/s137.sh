set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 10, two H100s + 32 cores: v = the iterate of this session's last library
# (270ce6a) that prints each variant's time a step beyond its busiest device's kernels.
# Black-Scholes' ten steps and Jacobi on the GPUs against each GPU alone.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s137.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for n in bsg-v1 bsg-v2 bsg-v3; do
  timeout 60 .device/v/iterate blackscholes --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s"; grep -E "beyond|speedup" $o/$n.txt
done
timeout 90 .device/v/iterate jacobi --size large --budget 3 --devices gpu --variants single,session --submit --json $o/jac-v1.json > $o/jac-v1.txt 2>&1
echo "jac-v1 rc $? at $(el) s"; grep -E "beyond|speedup" $o/jac-v1.txt
gzip -9 $o/*.json; pack
echo done at $(el) s
