// One float4 per work-group of 255 (pattern 1:255): the sum of the group's inputs.
__kernel void group_sum(__global const float4* in, __global float4* out, __local float4* scratch) {
    size_t l = get_local_id(0), n = get_local_size(0);
    scratch[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        float4 s = 0;
        for (size_t k = 0; k < n; k++) s += scratch[k];
        out[get_global_id(0) / n] = s;
    }
}

// A kernel whose size_t parameter the host cannot pass portably.
__kernel void sized(__global float* x, size_t n) {
    x[get_global_id(0)] = (float)n;
}
