// Kernels written as ordinary OpenCL applications write them, with no thought of co-execution:
// indexed by group and local ids, reading the global offset and size, staging tiles in __local
// memory behind barriers, writing one element per work-group, scattering by data, loading
// vectors. tests/real_kernels.rs runs each one co-executed and compares it with a CPU loop.

// SAXPY indexed the way CUDA ports write it: block index times block size plus thread index.
__kernel void group_saxpy(const float a, __global const float* x, __global float* y) {
    const size_t i = get_group_id(0) * get_local_size(0) + get_local_id(0);
    y[i] = a * x[i] + y[i];
}

// A kernel written for launches with a global offset: it indexes from the offset's start.
__kernel void offset_scale(__global const float* x, __global float* y, const float s) {
    const size_t i = get_global_id(0) - get_global_offset(0);
    y[i] = s * x[i] + (float)get_group_id(0);
}

#define TILE 16

// C = A · B, A of M × K, B of K × N, C of M × N, row-major, in TILE × TILE tiles staged in
// __local memory (K a multiple of TILE).
__kernel void matmul_tiled(__global const float* A, __global const float* B, __global float* C,
                           const int M, const int N, const int K) {
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    const int lc = get_local_id(0), lr = get_local_id(1);
    const int col = get_group_id(0) * TILE + lc;
    const int row = get_group_id(1) * TILE + lr;
    float acc = 0.0f;
    for (int t = 0; t < K / TILE; ++t) {
        As[lr][lc] = A[row * K + t * TILE + lc];
        Bs[lr][lc] = B[(t * TILE + lr) * N + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k) acc += As[lr][k] * Bs[k][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M) C[row * N + col] = acc;
}

// A histogram counted per work-group in __local memory, then added to the global bins; the
// values are read in a grid-stride loop over the whole NDRange.
__kernel void histogram_local(__global const uint* data, const uint n, __global uint* bins,
                              __local uint* local_bins, const uint nbins) {
    const uint l = get_local_id(0);
    for (uint b = l; b < nbins; b += get_local_size(0)) local_bins[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        atomic_inc(&local_bins[data[i] % nbins]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = l; b < nbins; b += get_local_size(0))
        if (local_bins[b] != 0) atomic_add(&bins[b], local_bins[b]);
}

// The classic first pass of a reduction: each work-item adds two elements a group apart,
// then the group reduces in __local memory and writes one partial sum at its group id.
__kernel void reduce_partial(__global const float* in, __global float* partial,
                             __local float* scratch) {
    const size_t l = get_local_id(0), n = get_local_size(0), g = get_group_id(0);
    const size_t base = g * n * 2 + l;
    scratch[l] = in[base] + in[base + n];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) partial[g] = scratch[0];
}

// A 2-D per-work-group sum: one result per work-group, stored at the group's row-major index.
__kernel void tile_sums(__global const float* in, __global float* sums, __local float* scratch) {
    const size_t lx = get_local_id(0), ly = get_local_id(1);
    const size_t w = get_local_size(0), l = ly * w + lx, n = w * get_local_size(1);
    scratch[l] = in[get_global_id(1) * get_global_size(0) + get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) sums[get_group_id(1) * get_num_groups(0) + get_group_id(0)] = scratch[0];
}

// A permutation: each element goes where the index array says.
__kernel void scatter(__global const uint* perm, __global const float* in, __global float* out) {
    const size_t i = get_global_id(0);
    out[perm[i]] = in[i];
}

// out = inᵀ for in of h rows × w columns, through a padded __local tile.
__kernel void transpose_tiled(__global const float* in, __global float* out, const uint w,
                              const uint h) {
    __local float tile[TILE][TILE + 1];
    const uint x = get_group_id(0) * TILE + get_local_id(0);
    const uint y = get_group_id(1) * TILE + get_local_id(1);
    tile[get_local_id(1)][get_local_id(0)] = in[y * w + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint tx = get_group_id(1) * TILE + get_local_id(0);
    const uint ty = get_group_id(0) * TILE + get_local_id(1);
    out[ty * h + tx] = tile[get_local_id(0)][get_local_id(1)];
}

// Keep the values above a threshold: elements at or below it are left as they were.
__kernel void keep_above(__global const float* x, __global float* y, const float t) {
    const size_t i = get_global_id(0);
    if (x[i] > t) y[i] = x[i];
}

// Four floats per work-item through vload4/vstore4.
__kernel void scale4(__global const float* x, __global float* y, const float s) {
    const size_t i = get_global_id(0);
    vstore4(s * vload4(i, x) + (float4)(0.0f, 1.0f, 2.0f, 3.0f), i, y);
}

// The usual guard for an NDRange rounded up to a multiple of the work-group size.
__kernel void bounded_axpy(__global const float* x, __global float* y, const float a,
                           const uint n) {
    const size_t i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

// A 5-point stencil on a w × h grid, borders copied.
__kernel void stencil5(__global const float* in, __global float* out, const uint w,
                       const uint h) {
    const uint x = get_global_id(0), y = get_global_id(1);
    const uint i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        out[i] = in[i];
    } else {
        out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
    }
}

// One step of a Hillis-Steele inclusive scan: each element adds the one `off` places before.
__kernel void scan_step(__global const float* in, __global float* out, const uint off) {
    const size_t i = get_global_id(0);
    out[i] = i >= off ? in[i] + in[i - off] : in[i];
}

// A work-group's inclusive scan in __local memory, with the group's total on the side.
__kernel void block_scan(__global const uint* in, __global uint* out, __global uint* totals,
                         __local uint* tmp) {
    const size_t l = get_local_id(0), n = get_local_size(0);
    tmp[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t d = 1; d < n; d <<= 1) {
        const uint v = l >= d ? tmp[l - d] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[l] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[get_global_id(0)] = tmp[l];
    if (l == n - 1) totals[get_group_id(0)] = tmp[l];
}

// The scan's second pass: every element adds the totals of the groups before its own.
__kernel void add_block_offsets(__global uint* out, __global const uint* scanned_totals) {
    const size_t g = get_group_id(0);
    if (g > 0) out[get_global_id(0)] += scanned_totals[g - 1];
}

// Stream compaction: every value above the threshold is appended at the next free slot.
__kernel void compact(__global const float* in, __global float* out, __global uint* count,
                      const float t) {
    const float v = in[get_global_id(0)];
    if (v > t) out[atomic_inc(count)] = v;
}

// One Bellman-Ford sweep over a graph in CSR form: every reached vertex relaxes its edges.
__kernel void relax(__global const uint* row_start, __global const uint* cols,
                    __global const uint* weights, __global uint* dist, const uint n) {
    const uint u = get_global_id(0);
    if (u >= n) return;
    const uint du = dist[u];
    if (du == UINT_MAX) return;
    for (uint e = row_start[u]; e < row_start[u + 1]; ++e)
        atomic_min(&dist[cols[e]], du + weights[e]);
}

// A float atomic add built on compare-and-swap, as OpenCL 1.2 code writes one.
inline void atomic_add_float(volatile __global float* p, const float v) {
    union { uint u; float f; } seen, sum;
    do {
        seen.f = *p;
        sum.f = seen.f + v;
    } while (atomic_cmpxchg((volatile __global uint*)p, seen.u, sum.u) != seen.u);
}

// Each value added to the sum of its bin.
__kernel void sum_by_bin(__global const float* x, __global const uint* bin, __global float* sums) {
    const size_t i = get_global_id(0);
    atomic_add_float(&sums[bin[i]], x[i]);
}

// A histogram that counts each bin only up to a cap: it reads the count it is about to raise.
__kernel void capped_histogram(__global const uint* data, __global uint* bins, const uint cap) {
    const uint b = data[get_global_id(0)];
    if (bins[b] < cap) atomic_inc(&bins[b]);
}

// The largest value seen in each bin.
__kernel void max_by_bin(__global const uint* x, __global const uint* bin, __global uint* maxes) {
    const size_t i = get_global_id(0);
    atomic_max(&maxes[bin[i]], x[i]);
}

// Each element moved one place on: work-item i writes element i + 1.
__kernel void shift_right(__global const float* x, __global float* y, const uint n) {
    const uint i = get_global_id(0);
    if (i + 1 < n) y[i + 1] = x[i];
}

// Doubles a w × h image stored in rows of `pitch` elements, over an NDRange rounded up to the
// work-group size in each dimension.
__kernel void bounded_scale2d(__global const float* in, __global float* out, const uint w,
                              const uint h, const uint pitch) {
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x < w && y < h) out[y * pitch + x] = 2.0f * in[y * pitch + x];
}

// Adds one to the element after each work-item's, in place: a shifted index.
__kernel void bump_next(__global float* y, const uint n) {
    const uint i = get_global_id(0);
    if (i + 1 < n) y[i + 1] += 1.0f;
}
