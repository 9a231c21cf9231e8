set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 15, call 7 on one GPU + 16-core CPU: a first call stages through heap memory and the
# second pins (this tree) against pinning at the first call (96a2fa5, *-before): saxpy 2^28 on the
# GPU alone, four calls per process, and the suite's first calls; and whether pinned memory is
# made faster on four threads at once (copyrate).
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it2; o=$OUT/r; mkdir -p $o
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
timeout 60 $b/copyrate 256 --reps 3 > $o/copyrate.txt 2>&1; echo "copyrate rc $?"; grep -E "pin" $o/copyrate.txt
for r in 1 2; do
  for v in before after; do
    bin=$b/saxpy; [ $v = before ] && bin=$b/saxpy-before
    HETDSL_DEVICES=1 timeout 60 $bin 268435456 --calls 4 > $o/saxpy-$v$r.txt 2>&1; echo "saxpy $v$r rc $?"; grep -E "^call|verified" $o/saxpy-$v$r.txt
  done
done
su() { local name=$1 bin=$2; shift 2; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout 150 $b/$bin --size paper --balancers default --reps 1 --energy off --json $o/$name.json "$@" > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; sed 's/\x1b\[[0-9;]*m//g' $o/$name.err | grep -E "device set-up|run ended" > $o/$name.phases; rm -f $o/$name.err; grep -E "first call" $o/$name.txt; }
su first-after suite --kernels binomial,gaussian,mandelbrot --devices 1
su first-before suite-before --kernels binomial,gaussian,mandelbrot --devices 1
grep -E "^(binomial|gaussian|mandelbrot) +(alone/one|default)" $o/first-after.txt $o/first-before.txt | cut -c1-150
tar czf $OUT/s35.tgz -C $OUT r && rm -rf $o
