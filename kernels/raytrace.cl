// A Whitted-style ray tracer (after the ray tracer EngineCL used): spheres and planes, sphere
// lights with hard shadows, Lambert + Phong shading, mirror reflection and refraction, 2x2
// supersampling. Recursion is replaced by a small stack of pending rays. One work-item per
// pixel (row-major, output 1:1); the scene (user struct `Primitive`) is given whole to every
// package and copied into local memory by each work-group. Irregular: pixels that see glass or
// mirrors trace many more rays than pixels that see walls.

#include "include/raytrace_scene.h"

#define MAX_DEPTH 4
#define MAX_RAYS 16
#define SAMPLES_PER_AXIS 2
#define EPSILON 1e-3f
#define SHININESS 20.0f

typedef struct {
    float3 origin;
    float3 direction;
    float3 weight;
    int depth;
} Ray;

// Distance along the ray to `p`, or -1 for a miss; `inside` says the ray starts inside a sphere.
static float intersect(__local const Primitive *p, float3 origin, float3 direction, int *inside)
{
    *inside = 0;
    if (p->kind == PRIM_PLANE) {
        const float3 n = p->position.xyz;
        const float facing = dot(n, direction);
        if (facing == 0.0f) {
            return -1.0f;
        }
        const float t = (p->size - dot(n, origin)) / facing;
        return t > EPSILON ? t : -1.0f;
    }
    const float3 oc = origin - p->position.xyz;
    const float b = dot(oc, direction);
    const float c = dot(oc, oc) - p->size * p->size;
    const float discriminant = b * b - c;
    if (discriminant < 0.0f) {
        return -1.0f;
    }
    const float root = sqrt(discriminant);
    const float near_t = -b - root;
    if (near_t > EPSILON) {
        return near_t;
    }
    const float far_t = -b + root;
    if (far_t > EPSILON) {
        *inside = 1;
        return far_t;
    }
    return -1.0f;
}

// Nearest primitive hit by the ray (-1 if none), with its distance and inside flag.
static int nearest_hit(__local const Primitive *scene, int count, float3 origin, float3 direction,
                       float *distance, int *inside)
{
    int best = -1;
    *distance = INFINITY;
    *inside = 0;
    for (int i = 0; i < count; ++i) {
        int in;
        const float t = intersect(&scene[i], origin, direction, &in);
        if (t > 0.0f && t < *distance) {
            *distance = t;
            *inside = in;
            best = i;
        }
    }
    return best;
}

// Whether any non-light primitive lies on the segment from `origin` to `distance` along it.
static int shadowed(__local const Primitive *scene, int count, float3 origin, float3 direction,
                    float distance)
{
    for (int i = 0; i < count; ++i) {
        if (scene[i].is_light) {
            continue;
        }
        int in;
        const float t = intersect(&scene[i], origin, direction, &in);
        if (t > 0.0f && t < distance) {
            return 1;
        }
    }
    return 0;
}

static float3 trace(__local const Primitive *scene, int count, float3 origin, float3 direction)
{
    Ray stack[MAX_RAYS];
    int pending = 1;
    stack[0].origin = origin;
    stack[0].direction = direction;
    stack[0].weight = (float3)(1.0f);
    stack[0].depth = 0;
    float3 colour = (float3)(0.0f);

    while (pending > 0) {
        const Ray ray = stack[--pending];
        float t;
        int inside;
        const int hit_index = nearest_hit(scene, count, ray.origin, ray.direction, &t, &inside);
        if (hit_index < 0) {
            continue;
        }
        __local const Primitive *hit = &scene[hit_index];
        if (hit->is_light) {
            colour += ray.weight * hit->colour.xyz;
            continue;
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
            const float light_distance = length(to_light);
            to_light = to_light / light_distance;
            if (shadowed(scene, count, point + normal * EPSILON, to_light, light_distance)) {
                continue;
            }
            const float lambert = dot(normal, to_light);
            if (lambert > 0.0f) {
                colour += ray.weight * (hit->diffuse * lambert) * hit->colour.xyz * scene[l].colour.xyz;
            }
            const float3 mirrored = to_light - 2.0f * lambert * normal;
            const float highlight = dot(ray.direction, mirrored);
            if (highlight > 0.0f) {
                colour += ray.weight * (hit->specular * pow(highlight, SHININESS)) * scene[l].colour.xyz;
            }
        }

        if (ray.depth >= MAX_DEPTH) {
            continue;
        }
        const float cos_in = -dot(normal, ray.direction);
        if (hit->reflection > 0.0f && pending < MAX_RAYS) {
            Ray r;
            r.direction = ray.direction + 2.0f * cos_in * normal;
            r.origin = point + normal * EPSILON;
            r.weight = ray.weight * hit->reflection * hit->colour.xyz;
            r.depth = ray.depth + 1;
            stack[pending++] = r;
        }
        if (hit->refraction > 0.0f && pending < MAX_RAYS) {
            const float eta = inside ? hit->refr_index : 1.0f / hit->refr_index;
            const float k = 1.0f - eta * eta * (1.0f - cos_in * cos_in);
            if (k >= 0.0f) {
                Ray r;
                r.direction = normalize(eta * ray.direction + (eta * cos_in - sqrt(k)) * normal);
                r.origin = point - normal * EPSILON;
                r.weight = ray.weight * hit->refraction;
                r.depth = ray.depth + 1;
                stack[pending++] = r;
            }
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
    // The whole work-group copies the scene into local memory (as float4s: 4 per primitive).
    event_t copied = async_work_group_copy((__local float4 *)scene,
                                           (__global const float4 *)primitives,
                                           (size_t)primitive_count * 4, 0);
    wait_group_events(1, &copied);

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
            colour += trace(scene, primitive_count, camera, normalize(on_screen - camera));
        }
    }
    const float3 scaled = colour * (255.0f / (SAMPLES_PER_AXIS * SAMPLES_PER_AXIS));
    pixels[pixel] = (uchar4)(convert_uchar3_sat(scaled), 255);
}
