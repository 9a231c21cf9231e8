set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
$b/devices > $o/devices.txt 2>&1
for t in 8 16; do timeout 40 env HETDSL_DEVICES=1 HETDSL_COPY_THREADS=$t $b/saxpy 268435456 --calls 5 > $o/saxpy-gpu-t$t.txt 2>&1; done
timeout 420 env RUST_LOG=hetdsl=debug $b/suite --size paper --balancers default,sigmoid --devices all --reps 3 --settle 3 --energy off --kernels binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise,aho --json $o/suite.json > $o/suite.txt 2> $o/suite.err
echo rc $?
gzip $o/suite.err
tail -4 $o/saxpy-gpu-t8.txt $o/saxpy-gpu-t16.txt
grep -v "^-" $o/suite.txt | head -120
