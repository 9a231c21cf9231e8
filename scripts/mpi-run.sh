#!/usr/bin/env bash
# Run hetdsl-mpi's examples as N ranks on this machine, from what scripts/mpi-stage.sh staged
# in .device/mpi (no MPI or Rust needed here). Run from the repository root:
#   bash scripts/mpi-run.sh N [mpi_samples arguments...]      e.g.  bash scripts/mpi-run.sh 2 all --scale 8
#   bash scripts/mpi-run.sh compare [N] [mpi_compare arguments...]   e.g.  bash scripts/mpi-run.sh compare 2
# The second form runs the compute-bound kernels of examples/mpi_compare.rs twice, each run
# checked against a CPU reference, median of 3: one process over every device (no MPI, all the
# cores), then N ranks (default 2); then prints the table (per kernel: both ROIs and walls,
# their ratio, bytes each way and seconds not computing per rank) and writes single.json,
# ranks.json and compare.json.
# Rank r sees GPU r only (CUDA_VISIBLE_DEVICES, which NVIDIA's OpenCL honours) and the CPU
# device limited to its 1/N share of the cores: pinned there (taskset), and PoCL told as many
# threads (POCL_MAX_PTHREAD_COUNT for PoCL up to 3.x, POCL_CPU_MAX_CU_NUM from 4.0 on; each
# version ignores the other's name). RANK_DEVICES="0,1 0,2" instead gives rank r the r-th
# HETDSL_DEVICES list (indices of the unified device list) and leaves CUDA_VISIBLE_DEVICES
# alone; otherwise HETDSL_DEVICES (default all) filters what each rank sees. Every rank prints
# its devices and their compute units, to check the split. Where the device tool's $OUT is
# set, the JSON and the output go there; otherwise to /tmp. Ranks exchange data through shared
# memory, copied twice (Open MPI's btl_vader_single_copy_mechanism=none, which every machine
# allows); set OMPI_MCA_btl_vader_single_copy_mechanism=cma to try single copies where ptrace
# between the ranks is allowed.
set -uo pipefail
compare=0
if [ "${1:-}" = compare ]; then
    compare=1; shift
    if [[ "${1:-}" =~ ^[0-9]+$ ]]; then n=$1; shift; else n=2; fi
else
    n=${1:?number of ranks, or compare}; shift
fi
root=$PWD/.device/mpi
[ -x "$root/bin/mpirun" ] || { echo "nothing staged in $root: run scripts/mpi-stage.sh first" >&2; exit 2; }
# NVIDIA's OpenCL driver must be registered with the ICD loader (see scripts/gpu-measure.sh).
[ -f /usr/lib/libnvidia-opencl.so.1 ] && [ ! -f /etc/OpenCL/vendors/nvidia.icd ] &&
    echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export PATH=$root/bin:$PATH
export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Open MPI relocated: help files under $OPAL_PREFIX/share, plugins where they were staged.
export OPAL_PREFIX=$root
export OMPI_MCA_mca_base_component_path=$root/ompi
export PMIX_MCA_mca_base_component_path=$root/pmix
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export HETDSL_DEVICES=${HETDSL_DEVICES:-all}
export RANK_DEVICES=${RANK_DEVICES:-}
out=${OUT:-/tmp}
# Each rank: its GPU, its share of the cores.
wrapper=$(mktemp)
trap 'rm -f "$wrapper"' EXIT
cat > "$wrapper" <<'RANK'
#!/usr/bin/env bash
r=${OMPI_COMM_WORLD_RANK:-0}; n=${OMPI_COMM_WORLD_SIZE:-1}
per=$(( $(nproc --all) / n )); first=$(( r * per ))
if [ -n "$RANK_DEVICES" ]; then
    read -r -a lists <<< "$RANK_DEVICES"
    export HETDSL_DEVICES=${lists[$r]:?RANK_DEVICES has no list for rank $r}
else
    export CUDA_VISIBLE_DEVICES=$r
fi
# Fewer cores than ranks: the ranks share them all.
(( per >= 1 )) || exec "$@"
export POCL_MAX_PTHREAD_COUNT=$per POCL_CPU_MAX_CU_NUM=$per
if command -v taskset >/dev/null; then exec taskset -c "$first-$(( first + per - 1 ))" "$@"; fi
exec "$@"
RANK
chmod +x "$wrapper"
ranks() {
    mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" -x PATH -x LD_LIBRARY_PATH \
        -x OPAL_PREFIX -x HETDSL_DEVICES -x RANK_DEVICES -x OMPI_MCA_btl_vader_single_copy_mechanism \
        "$wrapper" "$@"
}
if [ "$compare" = 0 ]; then
    args=("$@")
    [ -n "${OUT:-}" ] && args+=(--json "$OUT/mpi-samples.json")
    ranks "$root/bin/mpi_samples" "${args[@]}" 2>&1 | tee "$out/mpi-run.txt"
    exit "${PIPESTATUS[0]}"
fi
bin=$root/bin/mpi_compare
[ -x "$bin" ] || { echo "$bin not staged: run scripts/mpi-stage.sh again" >&2; exit 2; }
log=$out/mpi-compare.txt
{
    echo "== one process, every device, every core"
    "$bin" single "$@" --json "$out/single.json"
    s1=$?
    echo "== $n ranks"
    ranks "$bin" ranks "$@" --json "$out/ranks.json"
    s2=$?
    echo "== comparison"
    "$bin" table "$out/single.json" "$out/ranks.json" --json "$out/compare.json"
    s3=$?
    echo "exit statuses: single $s1, ranks $s2, table $s3"
    [ "$s1" = 0 ] && [ "$s2" = 0 ] && [ "$s3" = 0 ]
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
