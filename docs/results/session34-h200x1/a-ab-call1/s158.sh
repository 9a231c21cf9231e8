set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 34, call 1, one H200 + 16-core CPU: the memory-bound kernels, 11 rounds alternated
# with the H200 alone in one package, before (suite-old, aedd2eb) and after (suite-new, ad6c3ff:
# a form slower on its one run runs once more), the two binaries alternated kernel by kernel.
if ! nvidia-smi -L | grep -q H200; then echo "NOT an H200: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
i=0
for k in elementwise reduction saxpy matvec; do
  if [ $((i % 2)) = 0 ]; then order="old new"; else order="new old"; fi; i=$((i+1))
  for v in $order; do
    left=$(( 585 - $(el) )); [ $left -gt 100 ] && left=100; [ $left -lt 20 ] && { echo "$k $v: no time left"; continue; }
    timeout $left $b/suite-$v --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels $k --json $o/$k-$v.json > $o/$k-$v.txt 2>&1
    echo "$k $v rc $? at $(el) s"
    grep -E "paired|rounds alternated|^[a-z0-9]+ +(alone/one|default)" $o/$k-$v.txt | cut -c1-400
    gzip -9 $o/$k-$v.json; tar czf $OUT/s158.tgz -C /tmp r
  done
done
