// Kernels for the session tests: each has a plain CPU reference in tests/session.rs.

__kernel void saxpy(__global const float* x, __global const float* y, __global float* out, float a) {
    size_t i = get_global_id(0);
    out[i] = a * x[i] + y[i];
}

// In place: x[i] = x[i] * a + b.
__kernel void affine(__global float* x, float a, float b) {
    size_t i = get_global_id(0);
    x[i] = x[i] * a + b;
}

// 1-D three-point stencil with fixed ends: out[i] = (in[i-1] + in[i] + in[i+1]) / 3.
__kernel void stencil3(__global const float* in, __global float* out, uint n) {
    size_t i = get_global_id(0);
    if (i == 0 || i == n - 1) {
        out[i] = in[i];
    } else {
        out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f;
    }
}

// 2-D Jacobi sweep over a w x h grid (row-major, rows along dimension 1), fixed border.
__kernel void jacobi(__global const float* a, __global float* b, uint w, uint h) {
    size_t x = get_global_id(0);
    size_t y = get_global_id(1);
    size_t i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        b[i] = a[i];
    } else {
        b[i] = 0.25f * (a[i - 1] + a[i + 1] + a[i - w] + a[i + w]);
    }
}

// Forces-like step: every body feels every other (reads all positions, writes its own force).
__kernel void forces(__global const float* pos, __global float* force, uint n) {
    size_t i = get_global_id(0);
    float f = 0.0f;
    for (uint j = 0; j < n; j++) {
        f += (pos[j] - pos[i]) * 0.001f;
    }
    force[i] = f;
}

// Integrate-like step: each body moves by its own force.
__kernel void integrate(__global float* pos, __global const float* force, float dt) {
    size_t i = get_global_id(0);
    pos[i] = pos[i] + dt * force[i];
}

// Asks the NDRange's size (the engine passes it as a hidden argument): out[i] = in[n - 1 - i].
__kernel void reverse(__global const float* in, __global float* out) {
    size_t i = get_global_id(0);
    out[i] = in[get_global_size(0) - 1 - i];
}

// x[i] = x[i] * a + b applied 1 + 32i/n times: a cost that rises along the range.
__kernel void ramp(__global float* x, float a, float b, uint n) {
    size_t i = get_global_id(0);
    uint reps = 1 + (uint)(32 * i / n);
    float v = x[i];
    for (uint r = 0; r < reps; r++) {
        v = v * a + b;
    }
    x[i] = v;
}
