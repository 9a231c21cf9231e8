// `transpose` of ndrange.cl with the same parameters, written for a 1-D NDRange: the source a
// 1-D declaration compiles against in tests/runtime_source.rs.
__kernel void transpose(__global const float* in, __global float* out, int width, int height) {
    int i = get_global_id(0);
    out[i] = in[(i % width) * height + i / width];
}
