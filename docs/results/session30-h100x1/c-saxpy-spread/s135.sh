set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 8, one H100 + 16 cores: w (as call 7), saxpy alone, seven timed calls of
# each, three times: how far the spread of one package's time reaches on this host.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s135.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for i in 1 2 3; do
  [ $(el) -gt 200 ] && break
  timeout 120 .device/w/suite --size paper --balancers default,static --devices all --reps 7 --settle 3 --energy off --kernels saxpy --json $o/saxpy-w$i.json > $o/saxpy-w$i.txt 2>&1
  echo "saxpy-w$i rc $? at $(el) s"; grep -E "INVESTIGATE|alone|default  |static  |timed calls|settling" $o/saxpy-w$i.txt | cut -c1-170; pack
done
gzip -9 $o/*.json; pack
echo done at $(el) s
