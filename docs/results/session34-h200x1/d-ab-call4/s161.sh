set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 34, call 4, one H200 + 16-core CPU: the form rule's A/B again, on whatever host came,
# elementwise eight times and matvec four times per binary, alternated (suite-new = c1cb097,
# suite-old = the same with repeat.rs of aedd2eb: only the rule differs).
if ! nvidia-smi -L | grep -q H200; then echo "NOT an H200: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; free -g | head -2; } > $o/machine.txt 2>&1
one() { # kernel variant rep
  left=$(( 560 - $(el) )); [ $left -gt 45 ] && left=45; [ $left -lt 15 ] && { echo "$1 $2 $3: no time left"; return; }
  timeout $left $b/suite-$2 --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels $1 --json $o/$1-$2-$3.json > $o/$1-$2-$3.txt 2>&1
  echo "$1 $2 $3 rc $? at $(el) s: $(grep -E 'rounds alternated' $o/$1-$2-$3.txt | grep -oE 'one package [0-9./]+|default on the set [0-9./]+|ratio [0-9.]+ .ROI.|forms [a-z,-]+' | tr '\n' ' ')"
  gzip -9 $o/$1-$2-$3.json
}
for rep in 1 2 3 4 5 6 7 8; do
  if [ $((rep % 2)) = 0 ]; then one elementwise old $rep; one elementwise new $rep; else one elementwise new $rep; one elementwise old $rep; fi
  tar czf $OUT/s161.tgz -C /tmp r
done
for rep in 1 2 3 4; do
  if [ $((rep % 2)) = 0 ]; then one matvec old $rep; one matvec new $rep; else one matvec new $rep; one matvec old $rep; fi
done
tar czf $OUT/s161.tgz -C /tmp r
