// Four outputs per work-item (pattern 4:1) over a 2-D NDRange: item (x, y) of a width-wide
// grid writes out[4·(y·width + x) + k] = (x·c.x + y·c.y) · (k + 1) + c.z, for k = 0..3.
__kernel void quad_2d(__global float* out, float4 c, uint width) {
    const size_t x = get_global_id(0);
    const size_t y = get_global_id(1);
    const float base = (float)x * c.x + (float)y * c.y;
    const size_t i = 4 * (y * width + x);
    for (int k = 0; k < 4; k++) {
        out[i + k] = base * (float)(k + 1) + c.z;
    }
}
