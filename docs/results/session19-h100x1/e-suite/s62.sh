set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 19, call 5 on one H100 + 16-core CPU: the suite at paper size on every device with
# the binaries of 68bd6b1 (staging made at build): first calls and timed calls.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT/r; mkdir -p $o; T0=$(date +%s)
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 290 .device/s19/suite-new --size paper --balancers default --devices all --reps 3 --settle 2 --energy off --kernels binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,saxpy --json $o/paper.json > $o/paper.txt 2> $o/paper.err
echo "suite rc $? at $(( $(date +%s) - T0 )) s"
grep -E 'first call|^[a-z0-9]+ +(alone/one|alone/def|default)' $o/paper.txt | cut -c1-110
tar czf $OUT/s62.tgz -C $OUT r && rm -rf $o
