// A tile transpose-and-scale sized by the build options: -D BLOCK_SIZE=n sets the tile (and so
// the work-group, n x n), -D USE_DOUBLE the element type; tiles above 8 take an offset too.
#ifndef BLOCK_SIZE
#error "build with -D BLOCK_SIZE=n"
#endif

#ifdef USE_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define REAL double
#else
#define REAL float
#endif

#if BLOCK_SIZE > 8
__kernel void tile(__global const REAL* in, __global REAL* out, REAL scale, REAL offset,
                   uint width)
#else
__kernel void tile(__global const REAL* in, __global REAL* out, REAL scale, uint width)
#endif
{
    __local REAL t[BLOCK_SIZE][BLOCK_SIZE];
    size_t lx = get_local_id(0), ly = get_local_id(1);
    size_t gx = get_global_id(0), gy = get_global_id(1);
    t[ly][lx] = in[gy * width + gx];
    barrier(CLK_LOCAL_MEM_FENCE);
#if BLOCK_SIZE > 8
    out[gy * width + gx] = t[lx][ly] * scale + offset;
#else
    out[gy * width + gx] = t[lx][ly] * scale;
#endif
}
