// A kernel with a deliberate error on line 5, to check that build errors name this file and line.
__kernel void broken(__global float* out) {
    const size_t i = get_global_id(0);
    // The next line uses an undeclared identifier.
    out[i] = undeclared_identifier * 2.0f;
}
