// Gaussian blur of an RGBA image with a square filter of odd width (the EngineCL/Maat
// "Gaussian": image and filter in, blurred image out, 1:1). One work-item per output pixel,
// row-major over a 1-D NDRange. A package of rows needs the rows above and below it (the halo),
// so every device receives the whole image. Coordinates past the border are clamped to it.

__kernel void gaussian_blur(__global const uchar4 *image,
                            __global const float *filter,
                            __global uchar4 *blurred,
                            const int rows,
                            const int cols,
                            const int filter_width)
{
    const int pixel = (int)get_global_id(0);
    const int row = pixel / cols;
    const int col = pixel % cols;
    const int half_width = filter_width / 2;
    float4 sum = (float4)(0.0f);
    for (int fy = 0; fy < filter_width; ++fy) {
        const int y = clamp(row + fy - half_width, 0, rows - 1);
        for (int fx = 0; fx < filter_width; ++fx) {
            const int x = clamp(col + fx - half_width, 0, cols - 1);
            sum += filter[fy * filter_width + fx] * convert_float4(image[y * cols + x]);
        }
    }
    // Round to nearest; the weights sum to 1, so the sum stays within [0, 255] up to rounding.
    blurred[pixel] = convert_uchar4_sat(sum + 0.5f);
}
