set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 6, two GPUs + 32 cores: g = d034e2c (this session's last code). The session
# loops over every device (the CPU beside the GPUs: a first launch's regions with a slow
# device) and on the GPUs, to check the far-steal rule and the first staging there.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s143.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
run() { # name bench devices variants
  [ $(el) -gt 200 ] && { echo "$1 skipped (time)"; return; }
  timeout 60 .device/g/iterate $2 --size large --budget 3 --devices $3 --variants $4 --submit --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -E '^session  ' $o/$1.txt | awk '{print "step", $5, "MiB", $9, $13}') $(grep -o 'session on.*beyond' $o/$1.txt | cut -c17-24) $(grep -o 'speedup [0-9.]*.*' $o/$1.txt)"
  grep -E "split \(|split by" $o/$1.txt
}
run bsa-1 blackscholes all session
run jaca-1 jacobi all session
run bsa-2 blackscholes all session
run bsg-1 blackscholes gpu single,session
run jacg-1 jacobi gpu single,session
run chg-1 chain gpu single,session
gzip -9 $o/*.json; pack
echo done at $(el) s
