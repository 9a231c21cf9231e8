set -uo pipefail
# (The machine lent for this call was two H100s + 32 cores, not H200s: see machine.txt.)
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, fifth call, two H200s + 32 cores: the memory-bound kernels on every device,
# default against static, with a plan just short of balance run once more (e = ff21803,
# .device/e) and without (d = cc9f154, .device/d), alternated while time lasts.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s95.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for b in e1 d1 e2 d2; do
  left=$(( 470 - $(el) )); [ $left -lt 100 ] && break
  timeout $left .device/${b:0:1}/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/$b.json > $o/$b.txt 2>&1
  echo "$b rc $? at $(el) s"; grep -E "timed calls|^[a-z0-9]+ +(default|static)" $o/$b.txt | cut -c1-130; pack
done
gzip -9 $o/*.json; pack
