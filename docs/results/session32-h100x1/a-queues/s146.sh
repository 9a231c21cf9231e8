set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 32, call 2: the queues probe (a sweep's small kernel on a second queue).
o=/tmp/r; rm -rf $o; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
for s in 262144 16384; do timeout 60 .device/h/queues --small $s > $o/queues-$s.txt 2>&1; echo "rc $?"; cat $o/queues-$s.txt; done
tar czf $OUT/s146.tgz -C /tmp r
