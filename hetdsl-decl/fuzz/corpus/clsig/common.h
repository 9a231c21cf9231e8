// Types shared by the test kernels: resolved by the macros through the flattened source.
#define REAL float
typedef unsigned int count_t;
