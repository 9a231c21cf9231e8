set -uo pipefail
# (The machine lent for this call was two H100s + 32 cores: see machine.txt.)
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, seventh call, two H200s + 32 cores: the iterative benchmarks over every device
# (the CPU too), each device alone beside them, binaries of 8e16b10.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s97.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 420 .device/bin/iterate all --size large --budget 4 --devices all --variants single,session --submit --json $o/all.json > $o/all.txt 2>&1
echo "all rc $? at $(el) s"; grep -E "^==|^single|^session|first step|speedup|split" $o/all.txt | cut -c1-160
gzip -9 $o/*.json; pack
