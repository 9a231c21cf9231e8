// A scene of spheres, as a ray tracer passes it: an OpenCL struct with a 16-byte aligned
// vector first, then scalars (size 32, alignment 16).
typedef struct {
    float4 center;
    float radius;
    int material;
} Sphere;

// Distance from each point to the nearest sphere surface.
__kernel void nearest(__global const Sphere* spheres, int count,
                      __global const float4* points, __global float* dist) {
    int i = get_global_id(0);
    float best = INFINITY;
    for (int s = 0; s < count; s++) {
        float d = distance(points[i].xyz, spheres[s].center.xyz) - spheres[s].radius;
        best = fmin(best, d);
    }
    dist[i] = best;
}

// Moves every sphere by an offset (a vector passed by value).
__kernel void shift(__global Sphere* spheres, float4 offset) {
    int i = get_global_id(0);
    spheres[i].center += offset;
}
