// One stage of the Resource Allocation Problem's dynamic programme: with `previous[j]` the best
// profit from the activities so far using j units of the resource and `profit[x]` the next
// activity's profit for x units,
//   next[j] = max over 0 <= x <= j of previous[j - x] + profit[x].
// Work-item j loops j + 1 times, so each package costs more than the one before it (the
// papers' irregular RAP). Output 1:1; a package [a, b) reads the prefixes [0, b) of both
// inputs, so both are given whole.

__kernel void rap_stage(__global const int *previous,
                        __global const int *profit,
                        __global int *next)
{
    const int j = (int)get_global_id(0);
    int best = previous[j] + profit[0];
    for (int x = 1; x <= j; ++x) {
        best = max(best, previous[j - x] + profit[x]);
    }
    next[j] = best;
}
