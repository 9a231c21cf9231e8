set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 37, call 1, two H200s + 32 cores: where a co-executed memory-bound call's time
# outside its ROI goes (before the dispatcher starts, after the last package), against one
# H200 alone, from the library's debug events.
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels RUST_LOG=hetdsl::engine=debug
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s168.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
for set in all gpu; do
  timeout 200 $b/suite --size paper --balancers default --devices $set --reps 3 --settle 3 --paired 11 --energy off --kernels reduction,saxpy --json $o/outside-$set.json > $o/outside-$set.txt 2> $o/outside-$set.log
  echo "$set rc $? at $(el) s"
  grep -E "rounds alternated" $o/outside-$set.txt | cut -c1-330
  gzip -9 $o/*.json $o/*.log; pack
done
