// Reduction (the AMD APP SDK's sample, written from its algorithm): each work-item loads one
// uint4 and adds its four lanes, the work-group sums those in local memory by halving, and the
// group's first work-item writes the group's sum to output[get_group_id(0)]. The host adds the
// per-group sums. Kept as the SDK writes it, with get_group_id: hetdsl makes the built-in answer
// for the whole NDRange under co-execution.

__kernel void reduce(__global const uint4* input, __global uint* output, __local uint* sdata)
{
    uint tid = get_local_id(0);
    uint4 v = input[get_global_id(0)];
    sdata[tid] = v.x + v.y + v.z + v.w;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (tid == 0) {
        output[get_group_id(0)] = sdata[0];
    }
}
