set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
run() { timeout $1 .device/$2/suite --size paper --balancers default --devices all --reps 3 --settle 2 --energy off --kernels $3 --json $o/$4.json > $o/$4.txt 2>&1; }
run 150 bin stencil3d,matvec,gaussian,aho new1
run 150 old stencil3d,matvec,gaussian,aho old1
run 40 bin stencil3d,matvec new2
run 40 old stencil3d,matvec old2
for f in new1 old1 new2 old2; do echo "== $f"; grep -E "alone/one|alone/def| default " $o/$f.txt; done
