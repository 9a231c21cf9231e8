set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 35, call 1, one H200 + 16 cores: kernel time against package size (waves).
n=$(nvidia-smi -L | grep -c H200); if [ "$n" -lt 1 ]; then echo "NOT an H200: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin2; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; nvidia-smi -q -d CLOCK | grep -A4 "Applications\|Max Clocks" ; } > $o/machine.txt 2>&1
for k in nbody binomial mandelbrot rap gaussian taylor; do
  left=$(( 520 - $(el) )); [ $left -lt 20 ] && break
  timeout $left $b/waves --kernels $k --device 1 --size paper --reps 3 --fills 0.25,0.5,0.75,1,1.25,1.5,1.75,2,2.25,2.5,2.75,3,3.5,4,4.5,5 --pieces 1,2 --json $o/waves-$k.json > $o/waves-$k.txt 2>&1
  echo "$k rc $? at $(el) s"; cat $o/waves-$k.txt | cut -c1-200
  tar czf $OUT/s163.tgz -C /tmp r
done
