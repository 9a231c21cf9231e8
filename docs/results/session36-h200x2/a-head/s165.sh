set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 36, call 1, two H200s + 32 cores (binaries of ee00e82, .device/bin2): the memory-bound
# kernels, 11 rounds alternated with the better H200 alone in one package; then the papers'
# kernels on every device, medians of 3 after 3 settling calls, as far as the time allows.
if [ "$(nvidia-smi -L | grep -c H200)" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s165.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1; cat $o/machine.txt
timeout 160 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"
grep -E "rounds alternated|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/membound.txt | cut -c1-330
gzip -9 $o/*.json; pack
left=$(( 550 - $(el) )); echo "papers: limit $left s"
timeout $left $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,rap,binomial,gaussian,taylor,ray1,bm3d,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "papers rc $? at $(el) s"
grep -E "first call|settling|^[a-z0-9]+ +(alone|default)" $o/paper.txt | cut -c1-150
gzip -9 $o/*.json 2>/dev/null; pack
