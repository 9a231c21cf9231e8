set -uo pipefail
echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export POCL_DEVICES=pthread HETDSL_KERNELS=$PWD/.device/kernels
b=.device/bin; o=$OUT
{ date -u; nvidia-smi -L; nproc; lscpu | grep -E "Model name|NUMA|Socket"; } > $o/machine.txt
timeout 40 $b/copyrate 1024 --reps 3 > $o/copyrate.txt 2>&1
for r in 1 2; do for c in 32 0; do
  timeout 40 env HETDSL_DEVICES=1 HETDSL_READ_CHUNK_MIB=$c $b/saxpy 268435456 --calls 4 > $o/saxpy-c$c-r$r.txt 2>&1
done; done
for r in 1 2; do for c in 32 0; do
  timeout 80 env HETDSL_READ_CHUNK_MIB=$c $b/suite --size paper --balancers default --devices all --reps 1 --settle 2 --paired 5 --energy off --kernels stencil3d,saxpy,elementwise,reduction > $o/paired-c$c-r$r.txt 2>&1
done; done
cat $o/machine.txt $o/copyrate.txt
for f in $o/saxpy-c*.txt; do echo $f; grep "^call" $f | sed 's/, run().*//'; done
for f in $o/paired-c*.txt; do echo $f; grep "alternated" $f | sed 's/(forms.*)//'; done
