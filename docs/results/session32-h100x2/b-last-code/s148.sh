set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 32, call 4: h = 531fd95 (session 31's last), e = this session's last runtime (the
# lock taken again on its thread, a flag around balancer calls, queued launches holding their
# host-image sources). Black-Scholes and Jacobi on the GPUs alternated, then e alone: the
# chain, NBody 2^21 as a session, and two suite kernels over every device and the GPUs.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/kernels
o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf $OUT/s148.tgz -C /tmp r; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
cat $o/machine.txt
run() { # name build bench [extra]
  timeout ${4:-60} .device/$2/iterate $3 --size ${5:-large} --budget ${6:-3} --devices gpu --variants single,session ${7---submit} --json $o/$1.json > $o/$1.txt 2>&1
  echo "$1 rc $? at $(el) s: $(grep -o 'session on.*beyond' $o/$1.txt | cut -c17-24) $(grep -o 'speedup [0-9.]*.*' $o/$1.txt)"
}
for i in 1 2; do for b in h e; do run bs-$b$i $b blackscholes; run jac-$b$i $b jacobi; done; done
pack
run chain-e1 e chain
run nbody2m-e1 e nbody 200 2097152 6 " "
grep -E "split|kernels per step" $o/nbody2m-e1.txt
pack
[ $(el) -lt 380 ] && timeout 150 .device/e/suite --size paper --balancers default --devices all/gpu --reps 3 --settle 3 --energy off --kernels mandelbrot,binomial --json $o/suite.json > $o/suite.txt 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(mandelbrot|binomial) .*default" $o/suite.txt | cut -c1-150
gzip -9 $o/*.json; pack
echo done at $(el) s
