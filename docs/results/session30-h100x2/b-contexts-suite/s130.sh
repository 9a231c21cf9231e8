set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 3, two H100s + 32 cores: y = 79f4a99 (a context per device by default),
# p = the same binary with HETDSL_CONTEXTS=platform. Black-Scholes' ten steps on the GPUs,
# alternated; then the one-shot suite on the GPUs, kernel by kernel, p then d.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s130.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
mode() { [ $1 = p ] && echo platform || echo device; }
for i in 1 2; do for c in p d; do
  n=bsg-$c$i
  HETDSL_CONTEXTS=$(mode $c) timeout 60 .device/y/iterate blackscholes --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$n.json > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | awk '{print "step", $7, "MiB", $9}') $(grep -o 'speedup [0-9.]*' $o/$n.txt)"
done; done
pack
for k in nbody mandelbrot rap ray1 binomial; do for c in p d; do
  [ $(el) -gt 470 ] && { echo "$k $c skipped (time)"; continue; }
  HETDSL_CONTEXTS=$(mode $c) timeout 120 .device/y/suite --size paper --balancers default --devices gpu --reps 3 --settle 2 --energy off --kernels $k --json $o/$k-$c.json > $o/$k-$c.txt 2>&1
  echo "$k-$c rc $? at $(el) s"; grep -E "first call|timed calls|default  " $o/$k-$c.txt
done; pack; done
gzip -9 $o/*.json; pack
echo done at $(el) s
