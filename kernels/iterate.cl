// The kernels of the iterative benchmarks (examples/iterate.rs): launched many times over data
// that stays on the devices between launches. Each indexes with get_global_id only, so a
// package of work-groups runs with its global offset and touches exactly its own elements.

// N-body, first kernel of a step: body `i` sums the pull of every body (so `position` is read
// whole) and kicks its own velocity (1:1). xyz is the position, w the mass; `softening2` keeps
// close encounters finite.
__kernel void nbody_forces(__global const float4 *position,
                           __global float4 *velocity,
                           const int bodies,
                           const float dt,
                           const float softening2)
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
    float4 v = velocity[i];
    v.xyz += acceleration * dt;
    velocity[i] = v;
}

// N-body, second kernel of a step: drift every body with its new velocity (both 1:1).
__kernel void nbody_integrate(__global float4 *position,
                              __global const float4 *velocity,
                              const float dt)
{
    const size_t i = get_global_id(0);
    float4 p = position[i];
    p.xyz += velocity[i].xyz * dt;
    position[i] = p;
}

// One Jacobi sweep of the 2-D heat equation: every interior cell becomes the mean of its four
// neighbours; border cells keep their (fixed) values. A package of rows reads one row above and
// below its own (halo 1) and writes its own rows.
__kernel void jacobi_step(__global const float *in,
                          __global float *out,
                          const int width,
                          const int height)
{
    const int x = (int)get_global_id(0);
    const int y = (int)get_global_id(1);
    const size_t i = (size_t)y * (size_t)width + (size_t)x;
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = 0.25f * ((in[i - width] + in[i + width]) + (in[i - 1] + in[i + 1]));
}

// The cumulative normal distribution by the polynomial of Abramowitz and Stegun (26.2.17),
// absolute error below 7.5e-8.
static float cnd(const float d)
{
    const float k = 1.0f / (1.0f + 0.2316419f * fabs(d));
    const float poly =
        k * (0.319381530f +
             k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f))));
    const float tail = 0.39894228040143267794f * exp(-0.5f * d * d) * poly;
    return d > 0.0f ? 1.0f - tail : tail;
}

// Black-Scholes prices of a European call and put per option (all buffers 1:1).
__kernel void blackscholes(__global const float *price,
                           __global const float *strike,
                           __global const float *years,
                           const float riskfree,
                           const float volatility,
                           __global float *call,
                           __global float *put)
{
    const size_t i = get_global_id(0);
    const float s = price[i];
    const float x = strike[i];
    const float t = years[i];
    const float sqrt_t = sqrt(t);
    const float d1 = (log(s / x) + (riskfree + 0.5f * volatility * volatility) * t) /
                     (volatility * sqrt_t);
    const float d2 = d1 - volatility * sqrt_t;
    const float discounted = x * exp(-riskfree * t);
    call[i] = s * cnd(d1) - discounted * cnd(d2);
    put[i] = discounted * (1.0f - cnd(d2)) - s * (1.0f - cnd(d1));
}

// y = a * x + y, one element per work-item: the memory-bound link of a chain of launches.
__kernel void axpy(const float a, __global const float *x, __global float *y)
{
    const size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
