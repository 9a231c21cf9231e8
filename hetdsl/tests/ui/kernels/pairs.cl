// Two structs of different sizes, and the scalar types OpenCL or the host cannot pass portably.
typedef struct {
    float x;
    float y;
} Pair;

typedef struct {
    float x;
    float y;
    float z;
    float w;
} Quad;

__kernel void widen(__global const Pair* pairs, __global Quad* quads) {
    size_t i = get_global_id(0);
    quads[i] = (Quad){pairs[i].x, pairs[i].y, 0.0f, 1.0f};
}

__kernel void count(__global uint* counts, uint step) {
    counts[get_global_id(0)] += step;
}

__kernel void flags(__global uchar* out, bool on) {
    out[get_global_id(0)] = on;
}

__kernel void halves(__global half* out, float scale) {
    vstore_half(scale, get_global_id(0), out);
}
