// One sweep of a 7-point stencil on a volume of w × h × d voxels, stored x fastest: one
// work-item per voxel. Border voxels keep their value; an inner voxel becomes a weighted mean of
// itself and its six neighbours (weights 1/2, 1/12 each).
__kernel void stencil3d(__global const float* in, __global float* out) {
    const size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const size_t w = get_global_size(0), h = get_global_size(1), d = get_global_size(2);
    const size_t i = (z * h + y) * w + x;
    if (x == 0 || y == 0 || z == 0 || x == w - 1 || y == h - 1 || z == d - 1) {
        out[i] = in[i];
        return;
    }
    const size_t plane = w * h;
    const float sides =
        in[i - 1] + in[i + 1] + in[i - w] + in[i + w] + in[i - plane] + in[i + plane];
    out[i] = 0.5f * in[i] + (1.0f / 12.0f) * sides;
}
