#define VERSION(major, minor) ((major) * 100 + (minor))
#if VERSION(1, 2) > 100
__kernel void k(__global float* x) { x[get_global_id(0)] = 0.0f; }
#endif
