// The kernels of the README's tour of the launch builder: one per word of it.

// inout: every element scaled in place.
__kernel void scale(__global float* v, const float k) {
    v[get_global_id(0)] *= k;
}

// output 1:64 with __local scratch: one sum per work-group of 64.
__kernel void group_sum(__global const uint* in, __global uint* sums, __local uint* scratch) {
    const size_t lid = get_local_id(0), n = get_local_size(0);
    scratch[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) sums[get_global_id(0) / n] = scratch[0];
}

// whole: every work-item reads the whole table.
__kernel void lookup(__global const uint* table, const uint len, __global const uint* keys,
                     __global uint* out) {
    const size_t i = get_global_id(0);
    out[i] = table[keys[i] % len];
}

// reduce: every device counts into its own copy of the bins; the copies are summed.
__kernel void histogram(__global const uint* values, __global uint* bins, const uint nbins) {
    atomic_inc(&bins[values[get_global_id(0)] % nbins]);
}
