set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
$b/devices > $o/devices.txt 2>&1
for t in 8 4; do timeout 40 env HETDSL_DEVICES=1 HETDSL_COPY_THREADS=$t $b/saxpy 268435456 --calls 5 --json $o/saxpy-gpu-t$t.json > $o/saxpy-gpu-t$t.txt 2>&1; done
timeout 60 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 5 --energy off --kernels reduction,matvec,stencil3d,saxpy,elementwise --json $o/paired.json > $o/paired.txt 2>&1
timeout 420 env RUST_LOG=hetdsl=debug $b/suite --size paper --balancers default,sigmoid --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/suite.json > $o/suite.txt 2> $o/suite.err
echo rc $?
gzip $o/suite.err
grep "call \|host overhead" $o/saxpy-gpu-t*.txt
grep -v "^-" $o/paired.txt | grep "alternated\|SKIP\|fail"
grep -v "^-" $o/suite.txt | grep -v "^ *$" | head -150
