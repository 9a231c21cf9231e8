set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 32, call 6 (one H100 + 16 cores), e: the five memory-bound kernels, 21 rounds each
# timed in turn with the H100 alone (5 rounds left 5-10 % of this host's spread).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 400 .device/e/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 21 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound21.json > $o/membound21.txt 2>&1
echo "membound21 rc $? at $(el) s"; grep -o "^[a-z0-9]* on set all, 21 rounds.*" $o/membound21.txt | sed 's/(forms.*)//' | cut -c1-250
gzip -9 $o/*.json; tar czf $OUT/s150.tgz -C /tmp r
