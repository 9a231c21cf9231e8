// 3-D NDRange kernels: a 7-point stencil on a volume and a probe of the 3-D built-ins.

// One work-item per voxel; the border copies its input, the inside averages its six neighbours
// with itself.
__kernel void stencil7(__global const float* in, __global float* out) {
    size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    size_t w = get_global_size(0), h = get_global_size(1), d = get_global_size(2);
    size_t i = (z * h + y) * w + x;
    if (x == 0 || y == 0 || z == 0 || x == w - 1 || y == h - 1 || z == d - 1) {
        out[i] = in[i];
        return;
    }
    size_t plane = w * h;
    out[i] = 0.5f * in[i]
        + 0.125f * (in[i - 1] + in[i + 1] + in[i - w] + in[i + w])
        + 0.0625f * (in[i - plane] + in[i + plane]);
}

// Each work-item writes what the built-ins say about dimension 2 (and the group's x and y).
__kernel void probe3d(__global uint* out) {
    size_t w = get_global_size(0), h = get_global_size(1);
    size_t i = (get_global_id(2) * h + get_global_id(1)) * w + get_global_id(0);
    out[4 * i + 0] = (uint)get_group_id(2);
    out[4 * i + 1] = (uint)get_num_groups(2);
    out[4 * i + 2] = (uint)get_global_size(2);
    out[4 * i + 3] = (uint)(get_group_id(1) * 1000 + get_group_id(0));
}
