// The data's `const` is behind a typedef: the kernel cannot write `x`.
typedef const float cfloat;
__kernel void scale(__global cfloat* x, __global float* y, float a) {
    int i = get_global_id(0);
    y[i] = a * x[i];
}
