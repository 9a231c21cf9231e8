// A conditional on a macro the compiler sets by device: hetdsl cannot tell which branch is
// compiled, so it rewrites both.
#ifdef __ENDIAN_LITTLE__
__kernel void undecided_sizes(__global uint* out) {
    const size_t i = get_global_id(0);
    out[i] = (uint)(get_global_size(0) - i + get_num_groups(0));
}
#else
__kernel void undecided_sizes(__global uint* out) {
    const size_t i = get_global_id(0);
    out[i] = (uint)(get_num_groups(0) + get_global_size(0) - i);
}
#endif
