set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 15, call 2 on 1xH200 + 16-core CPU: (a) a submitted session loop's host time per step,
# the H200 alone against the H200 with an idle CPU beside it (Jacobi, chain); (b) where a first
# call's time outside its ROI goes (per device set-up phases, time before the first package).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it; o=$OUT
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
it() { local name=$1; shift; local t0=$(date +%s); timeout 120 $b/iterate "$@" --size large --budget 8 --submit --json $o/$name.json > $o/$name.txt 2>&1; echo "$name rc $? $(( $(date +%s) - t0 )) s"; grep -E "^==|^single|^session" $o/$name.txt | cut -c1-150; }
for r in 1 2; do
  it alone$r jacobi --devices 1 --variants single
  it both$r jacobi --devices 0,1 --variants session
  it chain-alone$r chain --devices 1 --variants single
  it chain-both$r chain --devices 0,1 --variants session
done
su() { local name=$1; shift; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 200 $b/suite --size paper --balancers default --reps 1 --energy off --json $o/$name.json "$@" > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; sed 's/\x1b\[[0-9;]*m//g' $o/$name.err | grep -E "device set-up|run ended" > $o/$name.phases; rm -f $o/$name.err; grep -E "first call" $o/$name.txt; head -12 $o/$name.phases | cut -c28-250; }
su first-gpu --kernels binomial,nbody,gaussian --devices 1
su first-all --kernels binomial,gaussian --devices all
