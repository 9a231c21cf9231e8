set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 37, call 2, two H200s + 32 cores (binary of 57e04e6's successor): the memory-bound
# kernels paired 11 rounds with the better H200 alone, after the end of a run stopped sleeping;
# the library's debug events give the time before and after each call's ROI.
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels RUST_LOG=hetdsl::engine::run=debug
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s169.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
timeout 240 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2> $o/membound.log
echo "membound rc $? at $(el) s"
grep -E "rounds alternated" $o/membound.txt | cut -c1-400
gzip -9 $o/*.json $o/*.log; pack
timeout 120 $b/suite --size paper --balancers default --devices gpu --reps 3 --settle 3 --paired 11 --energy off --kernels reduction,saxpy --json $o/gpu.json > $o/gpu.txt 2> $o/gpu.log
echo "gpu rc $? at $(el) s"
grep -E "rounds alternated" $o/gpu.txt | cut -c1-400
gzip -9 $o/*.json $o/*.log; pack
