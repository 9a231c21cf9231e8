#!/usr/bin/env bash
# Run hetdsl-mpi's sample as N ranks on this machine, from what scripts/mpi-stage.sh staged
# in .device/mpi (no MPI or Rust needed here). Run from the repository root:
#   bash scripts/mpi-run.sh N [mpi_samples arguments...]      e.g.  bash scripts/mpi-run.sh 2 all --scale 8
# Rank r sees GPU r only (CUDA_VISIBLE_DEVICES, which NVIDIA's OpenCL honours) and the CPU
# device limited to its 1/N share of the cores (pinned there, and PoCL told as many threads);
# HETDSL_DEVICES (default all) filters what each rank then sees. Where the device tool's $OUT
# is set, the ranks' report goes to $OUT/mpi-samples.json and the output to $OUT/mpi-run.txt.
set -uo pipefail
n=${1:?number of ranks}; shift
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
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export HETDSL_DEVICES=${HETDSL_DEVICES:-all}
# Each rank: its GPU, its share of the cores.
wrapper=$(mktemp)
cat > "$wrapper" <<'RANK'
#!/usr/bin/env bash
r=${OMPI_COMM_WORLD_RANK:-0}; n=${OMPI_COMM_WORLD_SIZE:-1}
per=$(( $(nproc --all) / n )); first=$(( r * per ))
export CUDA_VISIBLE_DEVICES=$r
# Fewer cores than ranks: the ranks share them all.
(( per >= 1 )) || exec "$@"
export POCL_CPU_MAX_CU_NUM=$per
if command -v taskset >/dev/null; then exec taskset -c "$first-$(( first + per - 1 ))" "$@"; fi
exec "$@"
RANK
chmod +x "$wrapper"
args=("$@")
[ -n "${OUT:-}" ] && args+=(--json "$OUT/mpi-samples.json")
log=${OUT:-/tmp}/mpi-run.txt
mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" -x PATH -x LD_LIBRARY_PATH \
    -x OPAL_PREFIX -x HETDSL_DEVICES -x OMPI_MCA_btl_vader_single_copy_mechanism \
    "$wrapper" "$root/bin/mpi_samples" "${args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
rm -f "$wrapper"
exit "$status"
