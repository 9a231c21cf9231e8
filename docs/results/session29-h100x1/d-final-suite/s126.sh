set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 29, call 7: the final build (111e931) on one H100 + 16 cores: every suite kernel
# with the default balancer against the honest baseline (the 16 copy threads beside PoCL's),
# then saxpy 2^28 end to end on the H100 alone and on every device.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s126.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 300 .device/f/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels nbody,rap,mandelbrot,binomial,gaussian,taylor,bm3d,ray1,ray2,aho --json $o/paper.json > $o/paper.txt 2>&1
echo "paper rc $? at $(el) s"; pack
left=$(( 390 - $(el) )); [ $left -gt 40 ] && { timeout $left .device/f/suite --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels saxpy,elementwise,reduction,matvec,stencil3d --json $o/membound.json > $o/membound.txt 2>&1; echo "membound rc $? at $(el) s"; pack; }
for d in 1 all; do
  [ $(el) -gt 420 ] && break
  HETDSL_DEVICES=$d timeout 40 .device/f/saxpy 268435456 --calls 5 > $o/saxpy-$d.txt 2>&1
  echo "saxpy $d rc $? at $(el) s: $(grep -oE 'ROI [0-9.]+ ms \([0-9.]+ GB/s' $o/saxpy-$d.txt | grep -oE '[0-9.]+ GB/s' | tr '\n' ' ')"
done
gzip -9 $o/*.json 2>/dev/null; pack
echo done at $(el) s
