// A histogram: every work-item adds one to the bin of its value. Bins are shared by every
// work-item, so each device counts its packages into its own whole copy (atomically within the
// device) and the copies are merged by sum.
__kernel void histogram(__global const uint* values, __global uint* bins, uint nbins) {
    const uint v = values[get_global_id(0)];
    atomic_inc(&bins[v % nbins]);
}

// The largest value seen per bin (atomic_max within a device, merged by max across devices).
__kernel void bin_max(__global const int* values, __global int* best, uint nbins) {
    const int v = values[get_global_id(0)];
    atomic_max(&best[(uint)v % nbins], v);
}
