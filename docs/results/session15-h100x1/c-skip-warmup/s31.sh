set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 15, call 3 on 1xH200 + 16-core CPU: (a) a queued launch no longer wakes a device with
# nothing to do (iterate-noskip: the same tree without that), Jacobi and chain over the H200 with
# an idle CPU beside it, alternated, with the host's time per queued launch by phase; (b) GPUs
# are no longer warmed up (suite-before: warm-up at both ends on every device): first calls.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
it() { local name=$1 bin=$2; shift 2; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 120 $b/$bin "$@" --size large --budget 8 --submit --json $o/$name.json > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; grep -E "^single|^session" $o/$name.txt | cut -c1-110;
  sed 's/\x1b\[[0-9;]*m//g' $o/$name.err | grep "queued launch" | sed -E 's/.*settle_ms=([0-9.e-]+) staged_ms=([0-9.e-]+) enqueued_ms=([0-9.e-]+) total_ms=([0-9.e-]+).*/\1 \2 \3 \4/' > $o/$name.q; rm -f $o/$name.err
  [ -s $o/$name.q ] && for c in 1 3 4; do sort -g -k$c $o/$name.q | awk -v c=$c '{a[NR]=$c} END {printf "  col %d median %.4f ms p90 %.4f (n=%d)\n", c, a[int(NR/2)+1], a[int(NR*0.9)+1], NR}'; done; }
it j-alone iterate jacobi --devices 1 --variants single
it c-alone iterate chain --devices 1 --variants single
for r in 1 2; do
  it j-noskip$r iterate-noskip jacobi --devices 0,1 --variants session
  it j-skip$r iterate jacobi --devices 0,1 --variants session
  it c-noskip$r iterate-noskip chain --devices 0,1 --variants session
  it c-skip$r iterate chain --devices 0,1 --variants session
done
su() { local name=$1 bin=$2; shift 2; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 200 $b/$bin --size paper --balancers default --reps 1 --energy off --json $o/$name.json "$@" > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; sed 's/\x1b\[[0-9;]*m//g' $o/$name.err | grep -E "device set-up|run ended" > $o/$name.phases; rm -f $o/$name.err; grep -E "first call" $o/$name.txt; }
su first-after suite --kernels binomial,nbody,gaussian,mandelbrot --devices 1
su first-before suite-before --kernels binomial,nbody,gaussian,mandelbrot --devices 1
su first-all-after suite --kernels binomial,nbody --devices all
grep -E "^(binomial|nbody|gaussian|mandelbrot) " $o/first-after.txt $o/first-before.txt $o/first-all-after.txt | cut -c1-160
tar czf $OUT/s31.tgz -C $OUT r && rm -rf $o
