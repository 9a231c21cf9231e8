// A transpose over a 1-D NDRange, for tests/dsl_runtime_source.rs: work-item i = y·width + x
// of a width-wide, height-high output takes element (y, x) of the height-wide input.
__kernel void transpose_rows(__global const float* in, __global float* out, int width, int height) {
    int i = get_global_id(0);
    int x = i % width;
    int y = i / width;
    out[i] = in[x * height + y];
}
