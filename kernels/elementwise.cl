// Two inputs and two outputs, one element each per work-item (pattern 1:1 on all four): the
// element-wise sum and product. Memory-bound: 16 bytes cross the link per work-item and the
// kernel does two flops with them.
__kernel void sumprod(__global const float* a, __global const float* b, __global float* sum,
                      __global float* prod)
{
    const size_t i = get_global_id(0);
    sum[i] = a[i] + b[i];
    prod[i] = a[i] * b[i];
}
