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

// A histogram that stops counting each bin at a cap: it reads the count it is about to raise.
__kernel void capped(__global const uint* values, __global uint* bins, uint cap) {
    const uint b = values[get_global_id(0)];
    if (bins[b] < cap) atomic_inc(&bins[b]);
}

// The largest value per bin.
__kernel void largest(__global const uint* values, __global const uint* bin, __global uint* maxes) {
    atomic_max(&maxes[bin[get_global_id(0)]], values[get_global_id(0)]);
}
