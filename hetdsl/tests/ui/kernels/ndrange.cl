// A transpose over a 2-D NDRange: its row comes from dimension 1.
__kernel void transpose(__global const float* in, __global float* out, int width, int height) {
    int x = get_global_id(0);
    int y = get_global_id(1);
    out[x * height + y] = in[y * width + x];
}

#define ROW_ID() get_group_id(2)
// A helper reading dimension 2 behind a macro.
int plane(void) { return ROW_ID(); }

__kernel void planes(__global float* out) {
    out[get_global_id(0)] = (float)plane();
}

// Work-groups of 32 work-items, required by the kernel.
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void fixed_group(__global float* out) {
    __local float tile[32];
    tile[get_local_id(0)] = 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[31 - get_local_id(0)];
}
