// A kernel that stages one value per work-item in __local memory.
__kernel void stage(__global float* x, __local float* scratch) {
    size_t l = get_local_id(0);
    scratch[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    x[get_global_id(0)] = scratch[get_local_size(0) - 1 - l];
}
