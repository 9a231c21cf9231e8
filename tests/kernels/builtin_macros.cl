// Built-ins reached only through macros, as real kernels often write them (and the kernel
// qualifier behind a macro, as hashcat's kernels do): each must answer for the caller's whole
// NDRange where the compiler expands it.
#define KERNEL_FQ __kernel
#define GROUP(d) get_group_id(d)
#define GID GROUP(0)
#define GSIZE \
    get_global_size(0)
#define NGROUPS get_num_groups(0)
#define GID0 (get_global_id(0) - get_global_offset(0))

KERNEL_FQ void macro_group_id(__global uint* out) {
    out[GID0] = (uint)GID;
}

KERNEL_FQ void macro_sizes(__global uint* out) {
    const uint i = (uint)GID0;
    out[i] = (uint)(GSIZE - i + NGROUPS);
}
