set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 7, one H100 + 16 cores: s = the suite of 9e248e4. The memory-bound kernels
# over every device with the default and static, each timed in turn with the H100 alone
# (--paired 3): call 2 had them only timed apart, within this host's spread.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s144.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
timeout 270 .device/s/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --paired 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"; grep -E "alternated|INVESTIGATE|default  |static  " $o/membound.txt | cut -c1-200
gzip -9 $o/*.json; pack
echo done at $(el) s
