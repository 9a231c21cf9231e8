// Scene primitives shared by the ray tracer's kernel and (by layout) its Rust host type
// `hetdsl_samples::samples::raytrace::Primitive`: 64 bytes, float4 fields first so that the
// 16-byte alignment of float4 leaves no padding.
#ifndef RAYTRACE_SCENE_H
#define RAYTRACE_SCENE_H

#define PRIM_PLANE 0
#define PRIM_SPHERE 1

typedef struct {
    float4 colour;     // rgb (w unused)
    float4 position;   // sphere: centre; plane: unit normal n (points into the room)
    float size;        // sphere: radius; plane: offset d of n . p = d
    float reflection;  // share of light reflected (mirror ray weight)
    float refraction;  // share of light transmitted (refracted ray weight)
    float refr_index;  // index of refraction of the inside
    float diffuse;     // Lambert weight
    float specular;    // Phong weight
    int kind;          // PRIM_PLANE or PRIM_SPHERE
    int is_light;      // light spheres emit `colour` and cast no shadow
} Primitive;

#endif
