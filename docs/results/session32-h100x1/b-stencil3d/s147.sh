set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 32, call 3 (one H100 + 16 cores): stencil3d's default on the set against the H100
# alone, twice plain and once with a debug log, to see where the set's calls lose.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s147.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for i in 1 2; do
timeout 100 .device/h/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 5 --energy off --kernels stencil3d --json $o/st$i.json > $o/st$i.txt 2>&1
echo "st$i rc $? at $(el) s"; grep -E "alternated|timed calls|settling" $o/st$i.txt | cut -c1-300
done
RUST_LOG=hetdsl=debug timeout 100 .device/h/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 3 --energy off --kernels stencil3d > $o/st-debug.log 2>&1
echo "debug rc $? at $(el) s"; grep -E "alternated|timed calls" $o/st-debug.log | cut -c1-300
gzip -9 $o/*.json $o/*.log; pack
echo done at $(el) s
