// REAL is double unless the build defines USE_FLOAT.
#ifndef USE_FLOAT
#define REAL double
#else
#define REAL float
#endif

__kernel void scale(__global REAL* x, REAL a) {
    x[get_global_id(0)] *= a;
}
