// A Whitted-style ray tracer (after the ray tracer EngineCL used): spheres and planes, sphere
// lights with hard shadows, Lambert + Phong shading, mirror reflection and refraction, 2x2
// supersampling. Recursion is replaced by a small stack of pending rays. One work-item per
// pixel (row-major, output 1:1); the scene (user struct `Primitive`) is given whole to every
// package and copied into local memory by each work-group. Irregular: pixels that see glass or
// mirrors trace many more rays than pixels that see walls.

#include "include/raytrace_scene.h"

// No fused multiply-adds, so that devices trace the same rays as the IEEE CPU reference: only
// the ulps of sqrt, pow and normalize differ.
#pragma OPENCL FP_CONTRACT OFF

#define MAX_DEPTH 4
#define MAX_RAYS 6
// Rays one primary ray can spawn: a full binary tree of depth MAX_DEPTH.
#define MAX_TRACED ((2 << MAX_DEPTH) - 1)
#define SAMPLES_PER_AXIS 2
#define EPSILON 1e-3f
#define SHININESS 20.0f

// A pending ray; kept small (48 bytes) because PoCL's CPU driver gives every work-item of a
// group its own copy of the ray stack once the kernel has a barrier.
// dot and normalize written out: the builtins may fuse or reorder (NVIDIA's do), and a ray
// that bounces among many spheres turns an ulp into a different pixel.
static float dot3(float3 a, float3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static float3 unit3(float3 v)
{
    return v * (1.0f / sqrt(dot3(v, v)));
}

typedef struct {
    float3 origin;
    float3 direction;
    float4 weight; // rgb weight; w: depth (number of bounces so far)
} Ray;

// Where the ray meets `p`: (distance, 1 if the ray starts inside the sphere else 0), with a
// negative distance for a miss. (Results by value, not through pointers: PoCL's CPU driver
// mis-aligns address-taken private scalars once a kernel has a barrier.)
static float2 intersect(__local const Primitive *p, float3 origin, float3 direction)
{
    const float2 miss = (float2)(-1.0f, 0.0f);
    if (p->kind == PRIM_PLANE) {
        const float3 n = p->position.xyz;
        const float facing = dot3(n, direction);
        if (facing == 0.0f) {
            return miss;
        }
        const float t = (p->size - dot3(n, origin)) / facing;
        return t > EPSILON ? (float2)(t, 0.0f) : miss;
    }
    const float3 oc = origin - p->position.xyz;
    const float b = dot3(oc, direction);
    const float c = dot3(oc, oc) - p->size * p->size;
    const float discriminant = b * b - c;
    if (discriminant < 0.0f) {
        return miss;
    }
    const float root = sqrt(discriminant);
    const float near_t = -b - root;
    if (near_t > EPSILON) {
        return (float2)(near_t, 0.0f);
    }
    const float far_t = -b + root;
    if (far_t > EPSILON) {
        return (float2)(far_t, 1.0f);
    }
    return miss;
}

// The nearest primitive hit: (distance, inside flag, index); distance INFINITY if none. The
// index stays a valid one (0) on a miss: PoCL's CPU driver, vectorising across work-items after
// a barrier, dereferences it even for work-items that took the miss branch.
static float3 nearest_hit(__local const Primitive *scene, int count, float3 origin, float3 direction)
{
    float3 best = (float3)(INFINITY, 0.0f, 0.0f);
    for (int i = 0; i < count; ++i) {
        const float2 hit = intersect(&scene[i], origin, direction);
        if (hit.x > 0.0f && hit.x < best.x) {
            best = (float3)(hit.x, hit.y, (float)i);
        }
    }
    return best;
}

// Whether any non-light primitive lies on the segment from `origin` to `distance` along it.
// (No early exit: every loop after the kernel's barrier keeps a trip count that is the same for
// every work-item, which PoCL's CPU driver needs; see `trace`.)
static int shadowed(__local const Primitive *scene, int count, float3 origin, float3 direction,
                    float distance)
{
    int blocked = 0;
    for (int i = 0; i < count; ++i) {
        const float t = intersect(&scene[i], origin, direction).x;
        blocked |= !scene[i].is_light && t > 0.0f && t < distance;
    }
    return blocked;
}

// Shade one ray: the light it gathers at its nearest hit; pushes its reflected and refracted
// rays onto `stack`.
static float3 shade_ray(__local const Primitive *scene, int count, const Ray ray, Ray *stack,
                        int *pending)
{
    const int depth = (int)ray.weight.w;
    const float3 nearest = nearest_hit(scene, count, ray.origin, ray.direction);
    const float t = nearest.x;
    float3 colour = (float3)(0.0f);
    if (t == INFINITY) {
        return colour;
    }
    const int inside = nearest.y > 0.0f;
    __local const Primitive *hit = &scene[(int)nearest.z];
    if (hit->is_light) {
        return ray.weight.xyz * hit->colour.xyz;
    }
    const float3 point = ray.origin + t * ray.direction;
    float3 normal = hit->kind == PRIM_SPHERE ? (point - hit->position.xyz) / hit->size
                                             : hit->position.xyz;
    if (inside) {
        normal = -normal;
    }

    for (int l = 0; l < count; ++l) {
        if (!scene[l].is_light) {
            continue;
        }
        float3 to_light = scene[l].position.xyz - point;
        const float light_distance = sqrt(dot3(to_light, to_light));
        to_light = to_light / light_distance;
        if (shadowed(scene, count, point + normal * EPSILON, to_light, light_distance)) {
            continue;
        }
        const float lambert = dot3(normal, to_light);
        if (lambert > 0.0f) {
            colour += ray.weight.xyz * (hit->diffuse * lambert) * hit->colour.xyz * scene[l].colour.xyz;
        }
        const float3 mirrored = to_light - 2.0f * lambert * normal;
        const float highlight = dot3(ray.direction, mirrored);
        if (highlight > 0.0f) {
            colour += ray.weight.xyz * (hit->specular * pow(highlight, SHININESS)) * scene[l].colour.xyz;
        }
    }

    if (depth >= MAX_DEPTH) {
        return colour;
    }
    const float cos_in = -dot3(normal, ray.direction);
    if (hit->reflection > 0.0f && *pending < MAX_RAYS) {
        Ray r;
        r.direction = ray.direction + 2.0f * cos_in * normal;
        r.origin = point + normal * EPSILON;
        r.weight = (float4)(ray.weight.xyz * hit->reflection * hit->colour.xyz, depth + 1);
        stack[(*pending)++] = r;
    }
    if (hit->refraction > 0.0f && *pending < MAX_RAYS) {
        const float eta = inside ? hit->refr_index : 1.0f / hit->refr_index;
        const float k = 1.0f - eta * eta * (1.0f - cos_in * cos_in);
        if (k >= 0.0f) {
            Ray r;
            r.direction = unit3(eta * ray.direction + (eta * cos_in - sqrt(k)) * normal);
            r.origin = point - normal * EPSILON;
            r.weight = (float4)(ray.weight.xyz * hit->refraction, depth + 1);
            stack[(*pending)++] = r;
        }
    }
    return colour;
}

// The light one primary ray gathers, following its reflections and refractions depth first.
// The loop runs a fixed MAX_TRACED times (the whole binary tree of rays a primary ray can
// spawn), idling once the stack is empty, rather than `while (pending > 0)`: PoCL 3's CPU
// driver miscompiles a loop whose trip count differs between work-items in a kernel with a
// barrier (it ran the body for work-items with an empty stack).
static float3 trace(__local const Primitive *scene, int count, float3 origin, float3 direction)
{
    Ray stack[MAX_RAYS];
    int pending = 1;
    stack[0].origin = origin;
    stack[0].direction = direction;
    stack[0].weight = (float4)(1.0f, 1.0f, 1.0f, 0.0f);
    float3 colour = (float3)(0.0f);
    for (int traced = 0; traced < MAX_TRACED; ++traced) {
        if (pending > 0) {
            const Ray ray = stack[--pending];
            colour += shade_ray(scene, count, ray, stack, &pending);
        }
    }
    return colour;
}

__kernel void raytrace(__global uchar4 *pixels,
                       const int width,
                       const int height,
                       const float camera_x,
                       const float camera_y,
                       const float camera_z,
                       const float view_width,
                       const float view_height,
                       __global const Primitive *primitives,
                       const int primitive_count,
                       __local Primitive *scene)
{
    // The whole work-group copies the scene into local memory, as float4s (4 per primitive).
    // A plain strided copy rather than async_work_group_copy: PoCL 5's CPU driver fails to link
    // wait_group_events (undefined _cl_wait_group_events) on the GPU machine.
    if (get_local_id(0) == 0) {
        for (int p = 0; p < primitive_count; ++p) {
            scene[p] = primitives[p];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int pixel = (int)get_global_id(0);
    const int px = pixel % width;
    const int py = pixel / width;
    const float3 camera = (float3)(camera_x, camera_y, camera_z);
    float3 colour = (float3)(0.0f);
    for (int sy = 0; sy < SAMPLES_PER_AXIS; ++sy) {
        for (int sx = 0; sx < SAMPLES_PER_AXIS; ++sx) {
            const float u = ((float)px + ((float)sx + 0.5f) / SAMPLES_PER_AXIS) / (float)width;
            const float v = ((float)py + ((float)sy + 0.5f) / SAMPLES_PER_AXIS) / (float)height;
            const float3 on_screen = (float3)((u - 0.5f) * view_width, (0.5f - v) * view_height, 0.0f);
            colour += trace(scene, primitive_count, camera, unit3(on_screen - camera));
        }
    }
    const float3 scaled = colour * (255.0f / (SAMPLES_PER_AXIS * SAMPLES_PER_AXIS));
    pixels[pixel] = (uchar4)(convert_uchar3_sat(scaled), 255);
}
