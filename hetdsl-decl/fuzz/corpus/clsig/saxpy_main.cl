// y = a * x + y, one element per work-item (pattern 1:1 on both buffers).
__kernel void saxpy(const float a, __global const float* x, __global float* y) {
    const size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
