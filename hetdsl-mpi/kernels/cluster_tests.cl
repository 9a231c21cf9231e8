// The kernels the cluster tests run on every rank, each with a CPU reference in the test.

// y = a * x + y, one element per work-item (1:1 on both buffers).
__kernel void saxpy(const float a, __global const float* x, __global float* y) {
    const size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}

// Escape-time Mandelbrot over a 2-D range: the iteration count of each pixel, row-major.
// No fused multiply-adds, so every device iterates exactly like the plain IEEE reference.
#pragma OPENCL FP_CONTRACT OFF
__kernel void mandelbrot(__global uint* counts, const float left, const float top,
                         const float step, const uint max_iterations) {
    const size_t column = get_global_id(0);
    const size_t row = get_global_id(1);
    const float cx = left + (float)column * step;
    const float cy = top - (float)row * step;
    float x = 0.0f;
    float y = 0.0f;
    uint i = 0;
    while (i < max_iterations && x * x + y * y <= 4.0f) {
        const float next_x = x * x - y * y + cx;
        y = 2.0f * x * y + cy;
        x = next_x;
        ++i;
    }
    counts[row * get_global_size(0) + column] = i;
}

// Every work-item reads the whole `table` (a `whole` input) and its own `x`.
__kernel void weigh(__global const uint* table, const uint n, __global const uint* x,
                    __global uint* out) {
    const size_t i = get_global_id(0);
    uint acc = 0;
    for (uint j = 0; j < n; ++j) {
        acc += table[j] * ((x[i] + j) % 13u);
    }
    out[i] = acc;
}

// A vertical three-point sum over a 2-D range: each pixel plus the pixels above and below it
// (zero past the edges), so a range's input is its rows and one row on each side (halo 1).
__kernel void column_sum(__global const uint* in, __global uint* out) {
    const size_t x = get_global_id(0);
    const size_t y = get_global_id(1);
    const size_t w = get_global_size(0);
    const size_t h = get_global_size(1);
    uint s = in[y * w + x];
    if (y > 0) s += in[(y - 1) * w + x];
    if (y + 1 < h) s += in[(y + 1) * w + x];
    out[y * w + x] = s;
}
