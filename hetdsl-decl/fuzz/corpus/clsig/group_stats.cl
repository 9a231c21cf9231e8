// One result per work-group (pattern 1:N with N the work-group size): the sum and the maximum
// of the group's inputs, reduced in __local memory.
typedef struct {
    float sum;
    float max;
    uint count;
} GroupStats;

__kernel void group_stats(__global const float* x, __global GroupStats* stats,
                          __local float* sums, __local float* maxes) {
    const size_t l = get_local_id(0);
    const size_t n = get_local_size(0);
    sums[l] = x[get_global_id(0)];
    maxes[l] = sums[l];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = n / 2; stride > 0; stride /= 2) {
        if (l < stride) {
            sums[l] += sums[l + stride];
            maxes[l] = fmax(maxes[l], maxes[l + stride]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        // get_group_id ignores the package's global offset: index by global id instead.
        GroupStats s;
        s.sum = sums[0];
        s.max = maxes[0];
        s.count = (uint)n;
        stats[get_global_id(0) / n] = s;
    }
}
