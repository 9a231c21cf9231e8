set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 15, call 4 on one GPU + 16-core CPU (ae58c81): a submitted session loop over the GPU
# alone against the GPU with the CPU beside it (Jacobi, chain, Black-Scholes), with the GPU's idle
# time between queued launches and the host's time per launch from the debug events.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
it() { local name=$1; shift; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 120 $b/iterate "$@" --size large --budget 8 --submit --json $o/$name.json > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; grep -E "^single|^session" $o/$name.txt | grep -v "kernels per step" | cut -c1-110; bash .device/gaps.sh $o/$name.err | tee $o/$name.gaps; rm -f $o/$name.err; }
for r in 1 2; do
  it j-alone$r jacobi --devices 1 --variants single
  it j-both$r jacobi --devices 0,1 --variants session
  it c-alone$r chain --devices 1 --variants single
  it c-both$r chain --devices 0,1 --variants session
  it b-alone$r blackscholes --devices 1 --variants single
  it b-both$r blackscholes --devices 0,1 --variants session
done
tar czf $OUT/s32.tgz -C $OUT r && rm -rf $o
