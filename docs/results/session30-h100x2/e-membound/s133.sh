set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 6, two H100s + 32 cores: the memory-bound kernels one-shot over every
# device, default and static, with --paired 3 (the best GPU alone timed in turn with the
# default); y = 79f4a99 with a context per device (d) and with HETDSL_CONTEXTS=platform (p).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s133.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for c in d p; do
  [ $(el) -gt 250 ] && break
  m=device; [ $c = p ] && m=platform
  HETDSL_CONTEXTS=$m timeout 200 .device/y/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --paired 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound-$c.json > $o/membound-$c.txt 2>&1
  echo "membound-$c rc $? at $(el) s"; grep -E "alternated|default  |static  " $o/membound-$c.txt | cut -c1-200; pack
done
gzip -9 $o/*.json; pack
echo done at $(el) s
