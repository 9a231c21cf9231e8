set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 15, call 5 on one GPU + 16-core CPU: sessions over the GPU and the CPU before (ae58c81,
# iterate-before) and after (64f93d0: a move from the host without fitting pinned staging reads
# the host image through the driver), alternated, against the GPU alone; and how fast pinned
# memory is made (copyrate's pin row).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 60 $b/copyrate 256 --reps 3 > $o/copyrate.txt 2>&1; echo "copyrate rc $?"; grep -E "pin|driver|DMA" $o/copyrate.txt
it() { local name=$1 bin=$2; shift 2; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 120 $b/$bin "$@" --size large --budget 8 --submit --json $o/$name.json > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s $(grep -E '^(single|session) ' $o/$name.txt | awk '{print "med>1", $7, "MiB", $9}')"; bash .device/gaps.sh $o/$name.err > $o/$name.gaps; grep -E "submit minus" $o/$name.gaps; rm -f $o/$name.err; }
it b-alone iterate blackscholes --devices 1 --variants single
it c-alone iterate chain --devices 1 --variants single
it j-alone iterate jacobi --devices 1 --variants single
for r in 1 2; do
  for k in blackscholes chain jacobi; do
    it ${k:0:1}-before$r iterate-before $k --devices 0,1 --variants session
    it ${k:0:1}-after$r iterate $k --devices 0,1 --variants session
  done
done
tar czf $OUT/s33.tgz -C $OUT r && rm -rf $o
