set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 24, call 3: fbd73d5 (session 23's final) on the whole suite, GPUs only, as the
# before figures; then NBody, GPUs only, under other balancers (is 0.955 the machine's limit?).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 300 .device/s24/suite --size paper --balancers default --devices gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/head.json > $o/head.txt 2>&1
echo "head rc $? at $(el) s"
grep -E "^gpu +[a-z0-9]+ +default" $o/head.txt | cut -c1-160
tar czf $OUT/s84.tgz -C /tmp r
timeout 150 .device/s25/suite-ab --size paper --balancers default,static,hguided,dynamic --devices gpu --reps 3 --settle 3 --energy off --kernels nbody --json $o/nbody.json > $o/nbody.txt 2>&1
echo "nbody rc $? at $(el) s"
grep -E "^gpu +nbody" $o/nbody.txt | cut -c1-160
tar czf $OUT/s84.tgz -C /tmp r
