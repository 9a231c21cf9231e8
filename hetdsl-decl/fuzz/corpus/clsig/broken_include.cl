#include "missing_header.h"

__kernel void k(__global float* x) {
    x[get_global_id(0)] = 0.0f;
}
