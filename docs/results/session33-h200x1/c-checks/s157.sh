set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 33, call 7 (binaries of e8499e2): the checks made stricter this session (every element,
# every work-group, each NBody body against its own step) on real GPU output at paper size.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
nvidia-smi -L
timeout 140 .device/bin/suite --size paper --balancers default --devices all --reps 1 --settle 0 --energy off --kernels nbody,saxpy,elementwise,stencil3d,reduction,matvec,gaussian,rap --json $o/checks.json > $o/checks.txt 2>&1
echo "suite rc $? at $(( $(date +%s) - T0 )) s"
grep -E "^[a-z0-9]+ +(alone|default)|SKIPPED|false|error" $o/checks.txt | cut -c1-140
gzip -9 $o/checks.json; tar czf $OUT/s157.tgz -C /tmp r
