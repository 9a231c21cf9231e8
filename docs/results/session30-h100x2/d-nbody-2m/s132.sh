set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 5, two H100s + 32 cores: NBody over 2^21 bodies as a session on the GPUs
# against each GPU alone, z = 270ce6a; each step run to its end (no --submit: a submitted
# single-GPU loop queued 18 steps of 3 s past its budget on two H200s).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s132.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for i in 1 2; do
  [ $(el) -gt 200 ] && break
  timeout 200 .device/z/iterate nbody --size 2097152 --budget 6 --devices gpu --variants single,session --json $o/nb2m-z$i.json > $o/nb2m-z$i.txt 2>&1
  echo "nb2m-z$i rc $? at $(el) s"; grep -E "^(single|session)  |speedup|moved|split" $o/nb2m-z$i.txt | cut -c1-140; pack
done
gzip -9 $o/*.json; pack
echo done at $(el) s
