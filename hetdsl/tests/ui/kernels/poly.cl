// A struct sized by a constant expression of a build define, in a C++-friendly wrapper.
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int indices[ORDER + 1];
    float weights[2 * ORDER];
} Poly;

__kernel void eval_poly(__global const Poly* polys, __global float* out) {
    size_t i = get_global_id(0);
    out[i] = polys[i].weights[0] * polys[i].indices[ORDER];
}

#ifdef __cplusplus
}
#endif
