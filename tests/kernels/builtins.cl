// Kernels that ask the work-item built-ins for the NDRange they were written for. Each is
// launched co-executed (one NDRange per package, with a global offset); their outputs must equal
// a single-device run's and the CPU's.

// 1-D, 16 work-items per group.
__kernel void group_id_1d(__global uint* out) {
    const size_t i = get_group_id(0) * get_local_size(0) + get_local_id(0);
    out[i] = (uint)get_group_id(0);
}

__kernel void num_groups_1d(__global uint* out) {
    out[get_global_id(0)] = (uint)get_num_groups(0);
}

__kernel void global_size_1d(__global uint* out) {
    const size_t i = get_global_id(0);
    out[i] = (uint)(get_global_size(0) - i);
}

__kernel void global_offset_1d(__global uint* out) {
    const size_t i = get_global_id(0) - get_global_offset(0);
    out[i] = (uint)(i * 3);
}

// 2-D, row-major, 8x4 work-items per group.
__kernel void group_id_2d(__global uint* out, const uint width) {
    const size_t x = get_group_id(0) * get_local_size(0) + get_local_id(0);
    const size_t y = get_group_id(1) * get_local_size(1) + get_local_id(1);
    out[y * width + x] = (uint)(get_group_id(1) * 100 + get_group_id(0));
}

__kernel void num_groups_2d(__global uint* out, const uint width) {
    out[get_global_id(1) * width + get_global_id(0)] =
        (uint)(get_num_groups(1) * 100 + get_num_groups(0));
}

__kernel void global_size_2d(__global uint* out) {
    out[get_global_id(1) * get_global_size(0) + get_global_id(0)] =
        (uint)(get_global_size(1) * 1000 + get_global_size(0));
}

__kernel void global_offset_2d(__global uint* out, const uint width) {
    const size_t x = get_global_id(0) - get_global_offset(0);
    const size_t y = get_global_id(1) - get_global_offset(1);
    out[y * width + x] = (uint)(y * 1000 + x);
}

// OpenCL C 2.0's linear id, which hetdsl defines for every device: the element a work-item
// owns in a row-major 2-D range, counted over the whole NDRange.
__kernel void global_linear_id_1d(__global uint* out) {
    out[get_global_linear_id()] = (uint)(get_global_linear_id() * 5);
}

__kernel void global_linear_id_2d(__global uint* out) {
    out[get_global_linear_id()] = (uint)(get_global_id(1) * 1000 + get_global_id(0));
}
