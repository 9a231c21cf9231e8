set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 34, call 2, one H200 + 16-core CPU: call 1's A/B four more times (old = aedd2eb,
# new = ad6c3ff), binaries alternated; then the papers' kernels with the new binary.
if ! nvidia-smi -L | grep -q H200; then echo "NOT an H200: nothing run"; nvidia-smi -L; exit 0; fi
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=/tmp/r; rm -rf $o; mkdir -p $o; T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
for rep in 1 2 3 4; do
  i=$rep
  for k in elementwise reduction saxpy matvec; do
    if [ $((i % 2)) = 0 ]; then order="old new"; else order="new old"; fi; i=$((i+1))
    for v in $order; do
      timeout 40 $b/suite-$v --size paper --balancers default --devices all --reps 3 --settle 3 --paired 11 --energy off --kernels $k --json $o/$k-$v-$rep.json > $o/$k-$v-$rep.txt 2>&1
      echo "$k $v $rep rc $? at $(el) s: $(grep -E 'rounds alternated' $o/$k-$v-$rep.txt | grep -oE 'one package [0-9./]+|default on the set [0-9./]+|ratio.*' | tr '\n' ' ')"
      gzip -9 $o/$k-$v-$rep.json
    done
  done
  tar czf $OUT/s159.tgz -C /tmp r
done
left=$(( 590 - $(el) )); echo "papers: limit $left s"
timeout $left $b/suite-new --size paper --balancers default --devices all --reps 3 --settle 3 --energy off --kernels binomial,gaussian,mandelbrot,nbody,taylor,bm3d,rap,ray1,ray2,aho,stencil3d --json $o/papers.json > $o/papers.txt 2>&1
echo "papers rc $? at $(el) s"
grep -E "first call|settling|^[a-z0-9]+ +(alone/one|alone/def|default)" $o/papers.txt | cut -c1-160
gzip -9 $o/papers.json; tar czf $OUT/s159.tgz -C /tmp r
