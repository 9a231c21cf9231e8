set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 13 final binaries (f2f34fa): the same runs as session 12 d-final / b-final.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt
$b/devices > $o/devices.txt 2>&1
timeout 40 env HETDSL_DEVICES=1 $b/saxpy 268435456 --calls 5 > $o/saxpy-gpu.txt 2>&1
timeout 60 $b/suite --size paper --balancers default --devices all --reps 3 --settle 3 --paired 5 --energy off --kernels reduction,matvec,stencil3d,saxpy,elementwise --json $o/paired.json > $o/paired.txt 2>&1
timeout 420 env RUST_LOG=hetdsl=debug $b/suite --size paper --balancers default,sigmoid --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/suite.json > $o/suite.txt 2> $o/suite.err
echo rc $?
gzip $o/suite.err
grep "^call" $o/saxpy-gpu.txt | sed 's/, set-up.*//'
grep "alternated\|SKIP\|fail" $o/paired.txt | sed 's/(forms.*)//'
grep -E "alone: | default | sigmoid |SKIP|first call" $o/suite.txt
