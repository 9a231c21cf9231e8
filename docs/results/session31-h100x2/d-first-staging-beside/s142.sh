set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 5, two GPUs + 32 cores: t = ccfada3 with a debug event per queued move;
# f = t, the queued moves' first staging pinned beside the session's build (four 1 MiB per
# GPU), and a first launch's thief leaving a far region its owner ends within 5 % of the
# launch's time so far. Jacobi and Black-Scholes on the GPUs, t and f alternated.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s142.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
RUST_LOG=hetdsl=debug timeout 40 .device/f/iterate jacobi --size large --budget 1 --devices gpu --variants session --submit > $o/jac-f.log 2>&1
echo "log f rc $? at $(el) s"
sed 's/\x1b\[[0-9;]*m//g' $o/jac-f.log | grep -E "queued move|queued launch" | head -6 | cut -c28-220
gzip -9 $o/*.log; pack
for i in 1 2 3; do for b in t f; do
  n=jac-$b$i
  timeout 60 .device/$b/iterate jacobi --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | awk '{print "setup", $4, "MiB", $9}') $(grep -o 'session on.*beyond' $o/$n.txt | cut -c17-24) $(grep -o 'speedup [0-9.]*.*' $o/$n.txt)"
done; done
pack
for i in 1 2; do for b in t f; do
  n=bsg-$b$i
  timeout 60 .device/$b/iterate blackscholes --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | awk '{print "setup", $4, "MiB", $9}') $(grep -o 'session on.*beyond' $o/$n.txt | cut -c17-24) $(grep -o 'speedup [0-9.]*.*' $o/$n.txt)"
done; done
gzip -9 $o/*.json; pack
echo done at $(el) s
