set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 4, two GPUs + 32 cores: t = ccfada3 and a debug event per queued move
# (waited, staging taken, read); p = t and a session that pins four 1 MiB stagings per device
# for its queued moves when it starts. Jacobi on the GPUs: debug logs, then t and p alternated.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s141.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
for b in t p; do
  RUST_LOG=hetdsl=debug timeout 40 .device/$b/iterate jacobi --size large --budget 1 --devices gpu --variants session --submit > $o/jac-$b.log 2>&1
  echo "log $b rc $? at $(el) s"
  sed 's/\x1b\[[0-9;]*m//g' $o/jac-$b.log | grep -E "staging pinned|queued move|queued launch" | head -12 | cut -c28-220
done
gzip -9 $o/*.log; pack
for i in 1 2 3; do for b in t p; do
  n=jac-$b$i
  timeout 60 .device/$b/iterate jacobi --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s"; grep -E "beyond|speedup|setup" $o/$n.txt | grep -v "^variant" | cut -c1-120
  grep -E "^session  " $o/$n.txt | awk '{print "   setup ms", $4}'
done; done
gzip -9 $o/*.json; pack
echo done at $(el) s
