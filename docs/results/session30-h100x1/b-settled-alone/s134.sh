set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 7, one H100 + 16 cores: w = the suite whose devices alone get the same
# --settle calls as the default (its library is 270ce6a's); the memory-bound kernels over
# every device, default and static, twice.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s134.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for i in 1 2; do
  [ $(el) -gt 300 ] && break
  timeout 200 .device/w/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound-w$i.json > $o/membound-w$i.txt 2>&1
  echo "membound-w$i rc $? at $(el) s"; grep -E "INVESTIGATE|alone:|default  |static  |timed calls" $o/membound-w$i.txt | cut -c1-150; pack
done
gzip -9 $o/*.json; pack
echo done at $(el) s
