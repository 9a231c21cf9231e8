set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 30, call 9, asked as nvidia-h200-x2: z = 270ce6a (the session's library; later
# commits changed comments, tests and the suite only). The sessions' four benchmarks on the
# GPUs against each GPU alone, Black-Scholes over every device too.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s136.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
it() { # name bench devices variants [extra...]
  local n=$1 k=$2 d=$3 v=$4; shift 4
  [ $(el) -gt 300 ] && { echo "$n skipped (time)"; return; }
  timeout 120 .device/z/iterate $k --devices $d --variants $v --json $o/$n.json "$@" > $o/$n.txt 2>&1
  echo "$n rc $? at $(el) s: $(grep -E '^session  ' $o/$n.txt | awk '{print "step", $7, "MiB", $9}') $(grep -o 'speedup [0-9.]*.*' $o/$n.txt)"
}
for i in 1 2 3 4; do it bsg-z$i blackscholes gpu single,session --size large --budget 3 --submit; done
for i in 1 2; do it bsa-z$i blackscholes all session --size large --budget 3 --submit; done
pack
it jac-z1 jacobi gpu single,session,opencl3 --size large --budget 3 --submit
it chg-z1 chain gpu single,session --size large --budget 3 --submit
it nb2m-z1 nbody gpu single,session --size 2097152 --budget 6
gzip -9 $o/*.json; pack
echo done at $(el) s
