// Writes through a pointer that travels before it is written: kept in a struct, returned by a
// function, chosen by a conditional, stored by a built-in through its second argument, and
// stored through another pointer, where the reader cannot follow it.
struct View {
    __global float* p;
    int n;
};

__global float* at(__global float* b, int o) {
    return b + o;
}

void keep(struct View* v, __global float* b) {
    v->p = b;
}

__kernel void in_struct(__global float* src, __global float* out) {
    int i = get_global_id(0);
    struct View v; v.p = out;
    v.p[i] = src[i];
}

__kernel void returned(__global float* src, __global float* out) {
    int i = get_global_id(0);
    *at(out, i) = src[i];
}

__kernel void conditional(__global float* src, __global float* out, __global float* tmp) {
    int i = get_global_id(0);
    (i % 2 ? out : tmp)[i] = src[i];
}

__kernel void by_sincos(__global float* src, __global float* out) {
    int i = get_global_id(0);
    src[i] = sincos(src[i], &out[i]);
}

__kernel void stored_away(__global float* src, __global float* out) {
    int i = get_global_id(0);
    struct View v;
    keep(&v, out);
    v.p[i] = src[i];
}

// Reads only through the same struct, function and conditional: `src` is an input.
__kernel void reads_only(__global float* src, __global float* out) {
    int i = get_global_id(0);
    struct View v = { src, 0 };
    out[i] = v.p[i] + *at(src, i) + (i % 2 ? src : src + 1)[i];
}
