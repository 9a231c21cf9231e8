// Writes the compiler sees but a reader of the kernel's own body alone does not: through a
// function-like macro, inside a helper function, and through a copy of the pointer.
#define STORE(p, i, v) p[i] = v
#define LOAD(p, i) (p)[i]

void put(__global float* p, int i, float v) {
    p[i] = v;
}

void put_twice(__global float* p, int i, float v) {
    put(p, i, v);
    put(p + 1, i, v);
}

float get(__global const float* p, int i) {
    return p[i];
}

__kernel void through_macro(__global float* src, __global float* out) {
    int i = get_global_id(0);
    STORE(out, i, LOAD(src, i));
}

__kernel void in_helper(__global float* src, __global float* out, int off) {
    int i = get_global_id(0);
    put_twice(out + off, i, get(src, i));
}

__kernel void through_copy(__global float* src, __global float* out) {
    int i = get_global_id(0);
    __global float* q = out + 4;
    q[i] = src[i];
}

// Reads only, through the same macros, helpers and a copy: `src` is an input.
__kernel void reads_only(__global float* src, __global float* out) {
    int i = get_global_id(0);
    __global float* r = src + 1;
    STORE(out, i, LOAD(src, i) + get(src, i) + r[i]);
}
