__kernel void blur(read_only image2d_t src, __global float* dst) {
    dst[get_global_id(0)] = 0.0f;
}

__kernel void sample(image2d_t src, sampler_t s, __global float* dst) {
    dst[get_global_id(0)] = 0.0f;
}
