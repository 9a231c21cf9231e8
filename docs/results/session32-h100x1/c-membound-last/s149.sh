set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 32, call 5 (one H100 + 16 cores), e = this session's last runtime: the memory-bound
# kernels timed in turn with the H100 alone, stencil3d with 21 rounds.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s149.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
timeout 150 .device/e/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 21 --energy off --kernels stencil3d --json $o/st21.json > $o/st21.txt 2>&1
echo "st21 rc $? at $(el) s"; grep -E "alternated" $o/st21.txt | cut -c1-300
pack
timeout 300 .device/e/suite --size paper --balancers default,static --devices all --reps 3 --settle 3 --paired 5 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"; grep -E "alternated" $o/membound.txt | cut -c1-300
gzip -9 $o/*.json; pack
echo done at $(el) s
