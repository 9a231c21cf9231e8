#define A0 x x
#define A1 A0 A0
#define A2 A1 A1
typedef struct __attribute__((packed)) { char c; int i[3]; struct { float4 v; } inner; } P;
__kernel void k(__global P* p, unsigned long n, __constant uchar16 *c, __local double* l) {}
