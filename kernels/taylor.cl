// A 2-D Taylor approximation (the papers' "Taylor": regular, 2-D NDRange): at every point of a
// grid, the order-K Taylor polynomial of f(x, y) = exp(x) * sin(y) around (x0, y0),
//   sum over m + n <= K of  d^(m+n)f/dx^m dy^n (x0, y0) * dx^m / m! * dy^n / n!,
// where the derivatives are exp(x0) * sin(y0 + n*pi/2): they cycle through
// sin, cos, -sin, -cos of y0. Cost per point grows as K^2 and is the same everywhere.
//
// Output: one float per work-item, row-major over the linearised index y * width + x.

__kernel void taylor2d(__global float *approx,
                       const float x0,
                       const float y0,
                       const float x_min,
                       const float y_min,
                       const float step,
                       const int width,
                       const int order)
{
    const size_t gx = get_global_id(0);
    const size_t gy = get_global_id(1);
    const float dx = x_min + (float)gx * step - x0;
    const float dy = y_min + (float)gy * step - y0;
    const float e = exp(x0);
    const float y_derivative[4] = {sin(y0), cos(y0), -sin(y0), -cos(y0)};

    float total = 0.0f;
    float x_term = 1.0f; // dx^m / m!
    for (int m = 0; m <= order; ++m) {
        float y_term = 1.0f; // dy^n / n!
        float inner = 0.0f;
        for (int n = 0; n <= order - m; ++n) {
            inner += y_derivative[n & 3] * y_term;
            y_term *= dy / (float)(n + 1);
        }
        total += x_term * inner;
        x_term *= dx / (float)(m + 1);
    }
    approx[gy * (size_t)width + gx] = e * total;
}
