// One time step of a direct-sum gravitational N-body simulation (after the AMD APP SDK NBody
// sample). Work-item `i` moves body `i`: it reads every body's position (so `position` is
// needed whole by every package) and only its own velocity (sliced 1:1). xyz is the position,
// w the mass; `softening2` keeps close encounters finite.

__kernel void nbody_step(__global const float4 *position,
                         __global const float4 *velocity,
                         const int bodies,
                         const float dt,
                         const float softening2,
                         __global float4 *new_position,
                         __global float4 *new_velocity)
{
    const size_t i = get_global_id(0);
    const float4 me = position[i];
    float3 acceleration = (float3)(0.0f);
    for (int j = 0; j < bodies; ++j) {
        const float4 other = position[j];
        const float3 r = other.xyz - me.xyz;
        const float inv_dist = rsqrt(dot(r, r) + softening2);
        // The body itself contributes nothing: r = 0.
        acceleration += (other.w * inv_dist * inv_dist * inv_dist) * r;
    }
    const float4 v = velocity[i];
    new_position[i] = (float4)(me.xyz + v.xyz * dt + 0.5f * acceleration * dt * dt, me.w);
    new_velocity[i] = (float4)(v.xyz + acceleration * dt, v.w);
}
