// European call options priced with a Cox-Ross-Rubinstein binomial tree (after the AMD APP SDK
// BinomialOption sample). One work-group prices four options, one per float4 lane; work-item
// `k` owns leaf `k` of the tree, and the group folds the tree back to its root in local memory.
//
// Output pattern 1:255 (with steps = 254): one float4 per work-group. The group index comes
// from get_global_id / get_local_size, not get_group_id, because packages are launched with a
// global work offset that get_group_id ignores.
//
// `steps` must be even (the fold does two half-steps per trip) and the work-group size must be
// steps + 1.

#define RISK_FREE 0.02f
#define VOLATILITY 0.30f

__kernel void binomial_options(const int steps,
                               __global const float4 *rand_in,
                               __global float4 *price_out,
                               __local float4 *value_a,
                               __local float4 *value_b)
{
    const size_t leaf = get_local_id(0);
    const size_t option4 = get_global_id(0) / get_local_size(0);
    const float4 r = rand_in[option4];

    // Each lane's option parameters are a linear mix of fixed bounds.
    const float4 spot = 5.0f * (1.0f - r) + 30.0f * r;
    const float4 strike = 1.0f * (1.0f - r) + 100.0f * r;
    const float4 years = 0.25f * (1.0f - r) + 10.0f * r;

    const float4 dt = years / (float)steps;
    const float4 vol_sqrt_dt = VOLATILITY * sqrt(dt);
    const float4 growth = exp(RISK_FREE * dt);
    const float4 up = exp(vol_sqrt_dt);
    const float4 down = 1.0f / up;
    const float4 p_up = (growth - down) / (up - down);
    const float4 p_up_disc = p_up / growth;
    const float4 p_down_disc = (1.0f - p_up) / growth;

    // Leaf value: the call's payoff at expiry after `leaf` up-moves and `steps - leaf` down-moves.
    const float4 at_expiry = spot * exp(vol_sqrt_dt * (2.0f * (float)leaf - (float)steps));
    value_a[leaf] = fmax(at_expiry - strike, 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);

    // Fold the tree: each half-step discounts the expected value one level back.
    for (int level = steps; level > 0; level -= 2) {
        if ((int)leaf < level) {
            value_b[leaf] = p_up_disc * value_a[leaf + 1] + p_down_disc * value_a[leaf];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if ((int)leaf < level - 1) {
            value_a[leaf] = p_up_disc * value_b[leaf + 1] + p_down_disc * value_b[leaf];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (leaf == 0) {
        price_out[option4] = value_a[0];
    }
}
