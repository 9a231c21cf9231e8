// Mandelbrot set, escape-time with smooth colouring (after the AMD APP SDK Mandelbrot sample).
// Each work-item computes four horizontally adjacent pixels, one per float4 lane, so the output
// pattern is 4:1: work-items [a, b) write pixels [4a, 4b). `width` must be a multiple of 4.
//
// The image spans x = left + column * step_x and y = top + row * step_y (step_y < 0: row 0 is
// the top). Pixels that never escape are black.

#define TWO_PI 6.28318530718f

// No fused multiply-adds: every device then iterates exactly like the plain IEEE reference, so
// only the colour's cos/log2 ulps differ, instead of chaotic boundary orbits diverging.
#pragma OPENCL FP_CONTRACT OFF

static uchar4 shade(float iterations_done, float radius2, int max_iterations)
{
    if (iterations_done >= (float)max_iterations) {
        return (uchar4)(0, 0, 0, 255);
    }
    // Smooth (continuous) escape count, then a cosine palette.
    const float smooth = iterations_done + 1.0f - log2(log2(radius2) * 0.5f);
    const float phase = smooth * TWO_PI / 256.0f;
    const float third = TWO_PI / 3.0f;
    const float red = (1.0f + cos(phase)) * 0.5f * 255.0f;
    const float green = (1.0f + cos(2.0f * phase + third)) * 0.5f * 255.0f;
    const float blue = (1.0f + cos(phase - third)) * 0.5f * 255.0f;
    return (uchar4)((uchar)red, (uchar)green, (uchar)blue, 255);
}

__kernel void mandelbrot(__global uchar4 *image,
                         const float left,
                         const float top,
                         const float step_x,
                         const float step_y,
                         const int max_iterations,
                         const int width)
{
    const size_t item = get_global_id(0);
    const int quads_per_row = width / 4;
    const int row = (int)(item / quads_per_row);
    const int column = (int)(item % quads_per_row) * 4;

    const float4 lane = (float4)(0.0f, 1.0f, 2.0f, 3.0f);
    const float4 cx = left + ((float)column + lane) * step_x;
    const float4 cy = (float4)(top + (float)row * step_y);

    float4 x = (float4)(0.0f);
    float4 y = (float4)(0.0f);
    float4 count = (float4)(0.0f);
    float4 radius2 = (float4)(0.0f);
    // A lane is live while |z|^2 <= 4; vector comparisons give -1 (all bits) for true.
    int4 live = (int4)(-1);
    for (int i = 0; i < max_iterations && any(live); ++i) {
        const float4 x2 = x * x;
        const float4 y2 = y * y;
        const float4 new_x = x2 - y2 + cx;
        const float4 new_y = 2.0f * x * y + cy;
        x = select(x, new_x, live);
        y = select(y, new_y, live);
        count = select(count, count + 1.0f, live);
        radius2 = x * x + y * y;
        live = live & (radius2 <= 4.0f);
    }

    image[4 * item + 0] = shade(count.x, radius2.x, max_iterations);
    image[4 * item + 1] = shade(count.y, radius2.y, max_iterations);
    image[4 * item + 2] = shade(count.z, radius2.z, max_iterations);
    image[4 * item + 3] = shade(count.w, radius2.w, max_iterations);
}
