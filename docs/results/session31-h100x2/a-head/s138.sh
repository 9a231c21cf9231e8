set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 31, call 1, asked for two H200s + 32 cores: h = a6c3d14 (session 30's last).
# The paper suite on every device and on the GPUs, then the session loops on the GPUs.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s138.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
timeout 330 .device/h/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels nbody,mandelbrot,binomial,rap,gaussian,taylor,bm3d,ray1,ray2 --json $o/paper.json > $o/paper.txt 2>&1
echo "suite rc $? at $(el) s"
grep -E "first call|^[a-z0-9]+ +default" $o/paper.txt | cut -c1-160
gzip -9 $o/paper.json; pack
for k in blackscholes jacobi chain; do
  [ $(el) -gt 480 ] && { echo "$k skipped (time)"; continue; }
  v=single,session; [ $k = jacobi ] && v=single,session,opencl3
  timeout 60 .device/h/iterate $k --size large --budget 3 --devices gpu --variants $v --submit --json $o/it-$k.json > $o/it-$k.txt 2>&1
  echo "it-$k rc $? at $(el) s"; grep -E "beyond|speedup|^(single|session|opencl3)  " $o/it-$k.txt | cut -c1-120
done
gzip -9 $o/*.json; pack
echo done at $(el) s
