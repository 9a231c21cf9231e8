#include "common.h"

// Four outputs per work-item (pattern 4:1) over a 2-D NDRange, staged through a __local tile.
__kernel void expand4(__global const REAL* in, __global REAL* out, __local REAL* tile, count_t width) {
    size_t x = get_global_id(0), y = get_global_id(1);
    size_t lx = get_local_id(0), ly = get_local_id(1);
    size_t i = y * width + x;
    tile[ly * get_local_size(0) + lx] = in[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    REAL v = tile[ly * get_local_size(0) + lx];
    for (int k = 0; k < 4; k++) {
        out[4 * i + k] = v * (REAL)(k + 1);
    }
}
