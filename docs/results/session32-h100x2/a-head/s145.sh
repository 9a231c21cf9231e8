set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 32, call 1: h = 531fd95 (session 31's last). The small-kernel-beside-a-large probe,
# a debug log of Black-Scholes' queued launches, then Black-Scholes and Jacobi on the GPUs.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s145.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
timeout 60 .device/h/queues > $o/queues.txt 2>&1; echo "queues rc $?"; cat $o/queues.txt
timeout 60 .device/h/queues --small 16384 > $o/queues-16k.txt 2>&1; tail -4 $o/queues-16k.txt
RUST_LOG=hetdsl=debug timeout 40 .device/h/iterate blackscholes --size large --budget 1 --devices gpu --variants session --submit > $o/bs-h.log 2>&1
echo "log rc $? at $(el) s"
RUST_LOG=hetdsl=debug timeout 40 .device/h/iterate blackscholes --size large --budget 1 --devices 1 --variants session --submit > $o/bs1-h.log 2>&1
echo "log1 rc $? at $(el) s"
gzip -9 $o/*.log; pack
run() { # name bench
  [ $(el) -gt 400 ] && { echo "$1 skipped (time)"; return; }
  timeout 60 .device/h/iterate $2 --size large --budget 3 --devices gpu --variants single,session --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -o 'session on.*beyond' $o/$1.txt | cut -c17-24) $(grep -o 'speedup [0-9.]*.*' $o/$1.txt)"
  grep "beyond" $o/$1.txt
}
for i in 1 2; do run bsg-h$i blackscholes; run jacg-h$i jacobi; done
gzip -9 $o/*.json; pack
echo done at $(el) s
