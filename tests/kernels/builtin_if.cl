// Built-ins under conditionals: only the branch the build options select is compiled, so only
// it may be rewritten or refused.
#define KERNEL __kernel

#if 0
// An older helper, never compiled: a helper cannot read the caller's NDRange.
uint old_width(void) { return (uint)get_global_size(0); }
#endif

#ifdef DEBUG_WIDTH
uint debug_width(void) { return (uint)get_num_groups(0); }
#endif

KERNEL void after_if0(__global uint* out) {
    const size_t i = get_global_id(0);
    out[i] = (uint)(get_global_size(0) - i);
}

// One macro, two definitions: the build options pick one.
#ifdef USE_GROUPS
#define GID get_group_id(0)
#define GROUPS get_num_groups(0)
#else
#define GID (get_global_id(0) / 16)
#define GROUPS 64
#endif

// The header differs by branch: the hidden parameter must go on the one compiled.
#ifdef USE_GROUPS
KERNEL void by_group(__global uint* out, uint scale) {
#else
KERNEL void by_group(__global uint* out) {
    const uint scale = 64;
#endif
    out[get_global_id(0)] = (uint)(GID * scale + GROUPS);
}
