set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 3, two GPUs + 32 cores: h = a6c3d14; n = h and a device thread that sees
# its launch's moves end (polling up to 100 us) enqueues its first kernel with no event of
# the upload queue to wait for. Jacobi on the GPUs, alternated; a debug log of each; NBody.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s140.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
for i in 1 2 3; do for b in h n; do
  n=jac-$b$i
  timeout 60 .device/$b/iterate jacobi --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s"; grep -E "beyond|speedup|kernels per|host time" $o/$n.txt | cut -c1-120
done; done
pack
for b in h n; do
  RUST_LOG=hetdsl=debug timeout 40 .device/$b/iterate jacobi --size large --budget 1 --devices gpu --variants session --submit > $o/jac-$b.log 2>&1
  echo "log $b rc $? at $(el) s"; grep -c "queued kernels" $o/jac-$b.log
done
gzip -9 $o/*.log; pack
for b in n h; do
  [ $(el) -gt 420 ] && break
  timeout 90 .device/$b/iterate nbody --size 2097152 --budget 6 --devices gpu --variants single,session --submit --json $o/nb-$b.json > $o/nb-$b.txt 2>&1
  echo "nb-$b rc $? at $(el) s"; grep -E "speedup|MiB" $o/nb-$b.txt | cut -c1-120
done
gzip -9 $o/*.json; pack
echo done at $(el) s
