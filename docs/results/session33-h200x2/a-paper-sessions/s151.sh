set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 33, call 1, asked for two H200s + 32 cores (binaries of bfadce5, .device/bin). Only on
# H200s (the machine the targets name): the papers' kernels on every device and on the two GPUs
# (default balancer, medians of 3 after 3 settling calls), then the iterative benchmarks on the
# two GPUs. On other cards: the machine's name only.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s151.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; exit 0; fi
$b/devices > $o/devices.txt 2>&1; cat $o/devices.txt | head -20
timeout 330 $b/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +default|geomean|balance" $o/paper.txt | cut -c1-160
gzip -9 $o/paper.json; pack
left=$(( 575 - $(el) )); echo "iterate limit $left s"
timeout $left $b/iterate all --size large --budget 6 --devices gpu --variants single,session,opencl3 --submit --json $o/iterate.json > $o/sessions.txt 2>&1
echo "iterate rc $? at $(el) s"; grep -E "^==|^single|^session|^opencl3|speedup|moved|beyond" $o/sessions.txt | cut -c1-150
gzip -9 $o/*.json; pack
