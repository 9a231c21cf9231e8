// Kernels whose signatures are spelled in less common but valid ways, for tests/dsl_declarations.rs.

// Parameters typed by typedefs of pointers.
typedef __global const float* in_floats;
typedef __global float* out_floats;
typedef out_floats out_floats_too;

__kernel void scale_by_typedefs(in_floats x, out_floats y, out_floats_too z, float a) {
    int i = get_global_id(0);
    y[i] = a * x[i];
    z[i] = x[i] + a;
}

// Scalars and buffers of several widths.
__kernel void mix_widths(__global const uchar* bytes, __global const long* wide, __global ulong* out,
                         uint k, long bias) {
    int i = get_global_id(0);
    out[i] = (ulong)(wide[i] * k + bytes[i] + bias);
}

// Buffers in array syntax, which C reads as pointers: `x[]`, and `w[4]`, whose size the
// compiler ignores.
__kernel void scale_arrays(__global const float x[], __global float y[], __constant float w[4],
                           float a) {
    int i = get_global_id(0);
    y[i] = a * x[i] + w[i % 4];
}

// Types through OpenCL typedefs: scalars (`real`, `index_t`) and a vector (`real4`); each
// work-item scales a row of `cols` elements.
typedef float real;
typedef float4 real4;
typedef int index_t;
__kernel void scale_reals(__global const real* x, __global real* y, real a, real4 c, index_t cols) {
    int i = get_global_id(0);
    for (index_t k = 0; k < cols; k++) {
        y[i * cols + k] = a * x[i * cols + k] + c.x * (real)k + c.w;
    }
}
