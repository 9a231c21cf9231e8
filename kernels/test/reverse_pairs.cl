// Two elements per work-item staged in __local memory (2 × the work-group size elements), then
// written back reversed within the work-group: every element of the __local buffer is used, so
// one sized for fewer work-items would be overrun.
__kernel void reverse_pairs(__global const float* in, __global float* out, __local float* scratch) {
    const size_t l = get_local_id(0);
    const size_t n = get_local_size(0);
    const size_t base = 2 * (get_global_id(0) - l);
    scratch[2 * l] = in[base + 2 * l];
    scratch[2 * l + 1] = in[base + 2 * l + 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[base + 2 * l] = scratch[2 * n - 1 - 2 * l];
    out[base + 2 * l + 1] = scratch[2 * n - 2 - 2 * l];
}
