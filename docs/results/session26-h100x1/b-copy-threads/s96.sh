set -uo pipefail
# (The machine lent for this call was one H100 + 16 cores, not an H200: see machine.txt.)
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, sixth call, one H200 + 16 cores: saxpy over 2^28 floats on the GPU alone with
# the host's copies split over 4, 8 (the default), 12 and 16 threads (HETDSL_COPY_THREADS),
# two rounds, binaries of ff21803; and the host's copy rate by thread count (threads.rs).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s96.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 60 .device/tools/threads > $o/threads.txt 2>&1; echo "threads rc $? at $(el) s"; cat $o/threads.txt | tail -5
for round in 1 2; do
  for t in 4 8 12 16; do
    timeout 40 env HETDSL_DEVICES=gpu HETDSL_COPY_THREADS=$t .device/bin/saxpy 268435456 --calls 5 > $o/saxpy-t$t-$round.txt 2>&1
    echo "t$t-$round rc $? at $(el) s: $(grep -o 'ROI [0-9.]* ms ([0-9.]* GB/s' $o/saxpy-t$t-$round.txt | sed 's/ROI //' | tr '\n' ' ')"
  done
  pack
done
