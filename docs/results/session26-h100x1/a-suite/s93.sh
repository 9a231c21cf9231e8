set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 26, third call, asked for one H100 + 16-core CPU (binaries of this session's last
# build, .device/bin): every kernel with the default balancer against the honest baseline
# (the better of the GPU alone in one package and under the default balancer), medians of 3
# after 3 settling calls; then saxpy over 2^28 floats (every device, the GPU alone).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s93.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; cat /sys/kernel/mm/transparent_hugepage/enabled; } > $o/machine.txt 2>&1
timeout 480 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/suite.json > $o/suite.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/suite.txt | cut -c1-120
gzip -9 $o/suite.json; pack
timeout 25 $b/saxpy 268435456 --calls 5 > $o/saxpy-all.txt 2>&1; echo "saxpy all rc $? at $(el) s"
timeout 25 env HETDSL_DEVICES=gpu $b/saxpy 268435456 --calls 5 > $o/saxpy-gpu.txt 2>&1; echo "saxpy gpu rc $? at $(el) s"
grep -E "^call|GB/s" $o/saxpy-*.txt | cut -c1-150
pack
