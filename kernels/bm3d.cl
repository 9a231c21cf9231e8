// Block-matching filter, the grouping step of BM3D (Dabov et al.) followed by a plain average
// of the group. For each pixel (one work-item, row-major) the BLOCK x BLOCK block around it is
// compared with every block whose centre lies within `radius` pixels; blocks whose sum of
// squared differences (SSD) is at most `threshold` are kept, up to MAX_MATCHES of the most
// similar (ties: the earlier in scan order). The output pixel is the rounded mean of the kept
// blocks' centre pixels. Pixels outside the image are clamped to the border.
//
// Irregular: a candidate is dropped as soon as its partial SSD exceeds the threshold or the
// worst kept SSD, so flat regions (many similar blocks) cost far more than textured ones.
// Packages of rows need `radius + BLOCK / 2` rows of halo: the image is given whole.

#define BLOCK 8
#define MAX_MATCHES 16

static int pixel_at(__global const uchar *image, int rows, int cols, int y, int x)
{
    return (int)image[clamp(y, 0, rows - 1) * cols + clamp(x, 0, cols - 1)];
}

__kernel void block_match_filter(__global const uchar *noisy,
                                 const int rows,
                                 const int cols,
                                 const int radius,
                                 const int threshold,
                                 __global uchar *filtered)
{
    const int pixel = (int)get_global_id(0);
    const int row = pixel / cols;
    const int col = pixel % cols;
    const int half_block = BLOCK / 2;

    int reference[BLOCK * BLOCK];
    for (int by = 0; by < BLOCK; ++by) {
        for (int bx = 0; bx < BLOCK; ++bx) {
            reference[by * BLOCK + bx] =
                pixel_at(noisy, rows, cols, row + by - half_block, col + bx - half_block);
        }
    }

    int kept_ssd[MAX_MATCHES];
    int kept_centre[MAX_MATCHES];
    int kept = 0;
    for (int dy = -radius; dy <= radius; ++dy) {
        for (int dx = -radius; dx <= radius; ++dx) {
            // A candidate must beat the threshold, and the worst kept block once the list is full.
            const int limit = kept == MAX_MATCHES ? min(threshold, kept_ssd[MAX_MATCHES - 1] - 1)
                                                  : threshold;
            int ssd = 0;
            for (int by = 0; by < BLOCK && ssd <= limit; ++by) {
                for (int bx = 0; bx < BLOCK; ++bx) {
                    const int d = pixel_at(noisy, rows, cols, row + dy + by - half_block,
                                           col + dx + bx - half_block)
                                  - reference[by * BLOCK + bx];
                    ssd += d * d;
                }
            }
            if (ssd > limit) {
                continue;
            }
            // Insertion after every kept block with an SSD <= this one (stable order).
            int slot = kept < MAX_MATCHES ? kept : MAX_MATCHES - 1;
            while (slot > 0 && kept_ssd[slot - 1] > ssd) {
                kept_ssd[slot] = kept_ssd[slot - 1];
                kept_centre[slot] = kept_centre[slot - 1];
                --slot;
            }
            kept_ssd[slot] = ssd;
            kept_centre[slot] = pixel_at(noisy, rows, cols, row + dy, col + dx);
            kept = min(kept + 1, MAX_MATCHES);
        }
    }

    // The block itself has SSD 0, so kept >= 1.
    int sum = 0;
    for (int k = 0; k < kept; ++k) {
        sum += kept_centre[k];
    }
    filtered[pixel] = (uchar)((sum + kept / 2) / kept);
}
