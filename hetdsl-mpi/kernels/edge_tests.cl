// The kernels of tests/mpi_edges.rs, each with a plain CPU loop in the test.

// Four outputs per work-item (pattern 4:1), from one input each (1:1).
__kernel void spread4(__global const uint* x, __global uint* out, const uint salt) {
    const size_t i = get_global_id(0);
    const uint v = x[i] * 2654435761u + salt;
    for (uint k = 0; k < 4u; ++k) {
        out[4 * i + k] = v ^ (k * 40503u);
    }
}

// One output per work-group (pattern 1:b, b the group size): the first work-item of each
// group sums its group's inputs, weighted by their place. The group is found from the global
// id, which counts the launch's offset where get_group_id does not.
__kernel void group_sum(__global const uint* x, __global uint* sums) {
    const size_t n = get_local_size(0);
    const size_t g = get_global_id(0) / n;
    if (get_local_id(0) == 0) {
        uint s = 0;
        for (size_t j = 0; j < n; ++j) {
            s += x[g * n + j] * (uint)(j + 1);
        }
        sums[g] = s;
    }
}

// A 1-D weighted window of radius r (pattern halo(r) on `in`), zero past the ends.
__kernel void window1d(__global const uint* in, __global uint* out, const uint r) {
    const long i = (long)get_global_id(0);
    const long n = (long)get_global_size(0);
    uint s = 0;
    for (long d = -(long)r; d <= (long)r; ++d) {
        if (i + d >= 0 && i + d < n) {
            s += in[i + d] * (uint)(d + (long)r + 1);
        }
    }
    out[i] = s;
}

// A 2-D vertical window of radius r rows (pattern halo(r) on `in`).
__kernel void window2d(__global const uint* in, __global uint* out, const uint r) {
    const long x = (long)get_global_id(0);
    const long y = (long)get_global_id(1);
    const long w = (long)get_global_size(0);
    const long h = (long)get_global_size(1);
    uint s = 0;
    for (long d = -(long)r; d <= (long)r; ++d) {
        if (y + d >= 0 && y + d < h) {
            s += in[(y + d) * w + x] * (uint)(d + (long)r + 1);
        }
    }
    out[y * w + x] = s;
}

// Adds `add` to each element in place (an inout, 1:1) and scales a `whole` table into it.
__kernel void bump(__global uint* y, __global const uint* table, const uint t, const uint add) {
    const size_t i = get_global_id(0);
    y[i] = y[i] + add + table[i % t];
}
