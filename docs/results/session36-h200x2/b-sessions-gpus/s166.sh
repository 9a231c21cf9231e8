set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 36, call 2, two H200s + 32 cores (binaries of c5e10df, .device/bin2): the iterative
# benchmarks on the two GPUs, Ray2 on every device (cut in call 1), then the papers' three
# lowest kernels on the two GPUs only.
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s166.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
timeout 300 $b/iterate all --size large --budget 6 --devices gpu --variants single,session,opencl3 --submit --json $o/iterate.json > $o/sessions.txt 2>&1
echo "iterate rc $? at $(el) s"; grep -E "^==|^single|^session|^opencl3|speedup|moved|beyond|effic" $o/sessions.txt | cut -c1-170
gzip -9 $o/*.json; pack
timeout 90 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels ray2 --json $o/ray2.json > $o/ray2.txt 2>&1
echo "ray2 rc $? at $(el) s"; grep -E "first call|settling|^[a-z0-9]+ +(alone|default)" $o/ray2.txt | cut -c1-150
gzip -9 $o/*.json; pack
left=$(( 560 - $(el) )); echo "gpus: limit $left s"
timeout $left $b/suite --size paper --balancers default --devices gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,rap --json $o/gpus.json > $o/gpus.txt 2>&1
echo "gpus rc $? at $(el) s"; grep -E "first call|settling|^[a-z0-9]+ +(alone|default)" $o/gpus.txt | cut -c1-150
gzip -9 $o/*.json 2>/dev/null; pack
