set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Session 16, call 4 on one H200 + 16-core CPU: packages staged through a ring of pinned slots of
# 32 MiB, an output's parts merged between the next package's input slots, the output ring made
# while the first kernel runs (1724c46) against staging the size of every buffer (*-before: 96a2fa5, the same one-shot
# engine as 3d8f700). (a) each kernel's first call on the GPU alone; (b) saxpy 2^28, four calls
# per process; (c) first calls on every device; (d) repeated calls of memory-bound kernels on
# every device, the two builds alternated.
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/it3; o=$OUT/r; mkdir -p $o; T0=$(date +%s)
# Starts a part only if this many seconds of the call's 600 are still ahead.
room() { [ $(( 600 - ($(date +%s) - T0) )) -gt $1 ] || { echo "skipped: $2 (no time left)"; false; }; }
{ date -u; nvidia-smi -L; nproc; } > $o/machine.txt 2>&1
su() { local name=$1 bin=$2; shift 2; local t0=$(date +%s); RUST_LOG=hetdsl=debug timeout $(( 600 - ($(date +%s) - T0) - 25 )) $b/$bin --size paper --balancers default --energy off --json $o/$name.json "$@" > $o/$name.txt 2> $o/$name.err; echo "$name rc $? $(( $(date +%s) - t0 )) s"; sed 's/\x1b\[[0-9;]*m//g' $o/$name.err | grep -E "device set-up|run ended" > $o/$name.phases; rm -f $o/$name.err; grep -E "first call" $o/$name.txt; }
K=binomial,nbody,gaussian,mandelbrot,taylor
su first-after suite --reps 1 --kernels $K --devices 1
for r in 1 2 3; do
  for v in after before; do
    bin=$b/saxpy; [ $v = before ] && bin=$b/saxpy-before
    HETDSL_DEVICES=1 timeout 60 $bin 268435456 --calls 4 > $o/saxpy-$v$r.txt 2>&1; echo "saxpy $v$r rc $?"; grep -E "^call|verified" $o/saxpy-$v$r.txt
  done
done
room 200 all && su all-after suite --reps 1 --kernels binomial,gaussian,mandelbrot --devices all

M=saxpy,elementwise,reduction,matvec,stencil3d,binomial
room 150 mem1 && su mem-after1 suite --reps 3 --settle 2 --kernels $M --devices all
room 90 mem1b && su mem-before1 suite-before --reps 3 --settle 2 --kernels $M --devices all
room 150 mem2 && su mem-after2 suite --reps 3 --settle 2 --kernels $M --devices all
room 90 mem2b && su mem-before2 suite-before --reps 3 --settle 2 --kernels $M --devices all
for f in $o/mem-*.txt; do echo "== $f"; grep -E "^[a-z0-9]+ +(alone/one|alone/def|default)" $f | cut -c1-110; done
tar czf $OUT/s39.tgz -C $OUT r && rm -rf $o
