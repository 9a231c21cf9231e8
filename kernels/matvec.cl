// Matrix-vector product y = A·x, A row-major with `cols` columns: one work-item per row. A
// work-item reads the `cols` elements of its row (so A is split `cols:1`), all of x (`whole`),
// and writes one element of y (`1:1`).

__kernel void matvec(__global const float* a, __global const float* x, __global float* y,
                     const int cols)
{
    size_t row = get_global_id(0);
    __global const float* r = a + row * (size_t)cols;
    float sum = 0.0f;
    for (int j = 0; j < cols; j++) {
        sum += r[j] * x[j];
    }
    y[row] = sum;
}
