set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 2, one H100 + 16 cores: r = x without 9adf221 (a form timed once at over
# 1.5 x the fastest runs again), alternated on elementwise; then x's memory-bound kernels with
# --paired 3 (the H100 alone, in one package and under the default, in turn with the default
# over every device), which times the baseline in the same stretch as the default.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s129.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
ew() { # name bin
  [ $(el) -gt 300 ] && { echo "$1 skipped (time)"; return; }
  timeout 90 .device/$2/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels elementwise --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s"; grep -E "settling|timed calls|default  " $o/$1.txt
}
for i in 1 2; do ew ew-r$i r; ew ew-x$i x; done
pack
timeout 240 .device/x/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --paired 3 --energy off --kernels reduction,elementwise,saxpy,matvec,stencil3d --json $o/membound-x.json > $o/membound-x.txt 2>&1
echo "membound-x rc $? at $(el) s"; grep -vE "^ |^device" $o/membound-x.txt | cut -c1-160
gzip -9 $o/*.json; pack
echo done at $(el) s
