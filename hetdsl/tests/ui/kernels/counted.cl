// Merged outputs whose atomics hand values back to the kernel.

// Stream compaction: each value above `t` goes to the next free slot.
__kernel void compact(__global const float* in, __global float* out, __global uint* count,
                      const float t) {
    const float v = in[get_global_id(0)];
    if (v > t) out[atomic_inc(count)] = v;
}

// A histogram whose atomics' values are not used: a merge fits.
__kernel void histogram(__global const uint* values, __global uint* bins, uint nbins) {
    if (values[get_global_id(0)] < nbins) atomic_inc(&bins[values[get_global_id(0)]]);
    else (void)atomic_add(&bins[nbins - 1], 1u);
}
