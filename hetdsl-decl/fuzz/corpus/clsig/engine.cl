// Kernels for the engine's integration tests. Each indexes with get_global_id, since packages
// are launched with a global work offset.

// 1:1 — integer, so the reference comparison is exact.
__kernel void scale_add(__global const int* a, __global const int* b, __global int* out, const int k) {
    const size_t i = get_global_id(0);
    out[i] = a[i] * k + b[i];
}

// 1:N — one sum per work-group of get_local_size(0) items, through local memory.
// The group is found from the global id because get_group_id ignores the global offset.
__kernel void group_sum(__global const uint* in, __global uint* sums, __local uint* scratch) {
    const size_t lid = get_local_id(0);
    const size_t n = get_local_size(0);
    scratch[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) sums[get_global_id(0) / n] = scratch[0];
}

// M:1 — four outputs per work-item.
__kernel void expand4(__global const uint* in, __global uint* out) {
    const size_t i = get_global_id(0);
    const uint v = in[i];
    out[4 * i + 0] = v;
    out[4 * i + 1] = v * 2u;
    out[4 * i + 2] = v * v;
    out[4 * i + 3] = v ^ 0x5a5a5a5au;
}

// `whole` input: every work-item reads a lookup table that is not split.
__kernel void lookup(__global const uint* table, const uint table_len, __global const uint* keys,
                     __global uint* out) {
    const size_t i = get_global_id(0);
    out[i] = table[keys[i] % table_len] + (uint)i;
}

// 2-D, row-major output over the linearised index y * width + x.
__kernel void coords(__global uint* out) {
    const size_t x = get_global_id(0), y = get_global_id(1);
    out[y * get_global_size(0) + x] = (uint)(y * 1000 + x);
}
