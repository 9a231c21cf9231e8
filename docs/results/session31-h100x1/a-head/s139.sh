set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 2, asked for one H200 + 16 cores: h = a6c3d14 (session 30's last, whose
# suite settles each device alone under the default balancer as its second baseline).
# Every suite kernel on every device, default balancer, over the honest baseline.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s139.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
timeout 500 .device/h/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels aho,binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,reduction,matvec,stencil3d,saxpy,elementwise --json $o/final.json > $o/final.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|INVESTIGATE|^[a-z0-9]+ +(alone:|default)" $o/final.txt | cut -c1-130
gzip -9 $o/final.json; pack
echo done at $(el) s
