set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 34, call 5, two H200s + 32-core CPU (binary of c1cb097): the memory-bound kernels,
# 11 rounds alternated with the better H200 alone in one package; then the papers' kernels on
# every device, medians of 3 after 3 settling calls, as far as the time allows.
n=$(nvidia-smi -L | grep -c H200); if [ "$n" -lt 2 ]; then echo "NOT two H200s: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 150 $b/suite-new --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1
echo "membound rc $? at $(el) s"
grep -E "rounds alternated|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/membound.txt | cut -c1-330
gzip -9 $o/membound.json; tar czf $OUT/s162.tgz -C /tmp r
left=$(( 470 - $(el) )); echo "papers: limit $left s"
timeout $left $b/suite-new --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,rap,binomial,gaussian,taylor,ray1,bm3d,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "papers rc $? at $(el) s"
grep -E "first call|settling|^[a-z0-9]+ +(alone|default)" $o/paper.txt | cut -c1-150
gzip -9 $o/paper.json 2>/dev/null; tar czf $OUT/s162.tgz -C /tmp r
