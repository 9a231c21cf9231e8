//! CPU references of the kernels in `kernels/cluster_tests.cl`, and the saxpy inputs they are
//! checked on, shared by the MPI tests and examples; each reference a plain loop written from
//! the kernel's maths (never the code under test). Pure.

/// The saxpy inputs the MPI checks use, `x` and `y0` of `n` elements each: on rank 0 (`root`),
/// which holds the caller's buffers; empty on the others.
pub fn saxpy_inputs(n: usize, root: bool) -> (Vec<f32>, Vec<f32>) {
    if !root {
        return (Vec::new(), Vec::new());
    }
    let x = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let y0 = (0..n).map(|i| (i % 77) as f32).collect();
    (x, y0)
}

/// The first element where `y` is not `a * x + y0`, described; either rounding is right, since
/// a device may fuse the multiply-add (OpenCL allows it) or not.
pub fn saxpy_mismatch(a: f32, x: &[f32], y0: &[f32], y: &[f32]) -> Option<String> {
    if x.len() != y.len() || y0.len() != y.len() {
        return Some(format!("lengths differ: x {}, y0 {}, y {}", x.len(), y0.len(), y.len()));
    }
    let right = |i: usize| y[i] == a * x[i] + y0[i] || y[i] == a.mul_add(x[i], y0[i]);
    (0..y.len())
        .find(|&i| !right(i))
        .map(|i| format!("y[{i}] = {}, expected {}", y[i], a * x[i] + y0[i]))
}

/// Iterations of `z = z² + c` from 0 before `|z| > 2`, at most `max`, at `c = (cx, cy)`.
pub fn mandelbrot_pixel(cx: f32, cy: f32, max: u32) -> u32 {
    let (mut x, mut y, mut i) = (0.0f32, 0.0f32, 0);
    while i < max && x * x + y * y <= 4.0 {
        let next_x = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = next_x;
        i += 1;
    }
    i
}

/// The first pixel of `rows` of a `width`-wide image whose count is not the reference's, for
/// the image whose pixel (column, row) is at `(left + column·step, top − row·step)`.
pub fn mandelbrot_mismatch(
    counts: &[u32],
    width: usize,
    rows: impl Iterator<Item = usize>,
    (left, top, step): (f32, f32, f32),
    max: u32,
) -> Option<String> {
    for row in rows {
        for column in 0..width {
            let expected =
                mandelbrot_pixel(left + column as f32 * step, top - row as f32 * step, max);
            match counts.get(row * width + column) {
                Some(&got) if got == expected => {}
                got => {
                    return Some(format!(
                        "pixel ({column}, {row}): {got:?} iterations, expected {expected}"
                    ))
                }
            }
        }
    }
    None
}

/// `weigh`'s output for an element whose input is `x`: the table weighted by `(x + j) % 13`.
pub fn weigh(table: &[u32], x: u32) -> u32 {
    (0..table.len() as u32).fold(0u32, |acc, j| {
        acc.wrapping_add(table[j as usize].wrapping_mul(x.wrapping_add(j) % 13))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_agree_with_values_worked_by_hand() {
        assert_eq!(saxpy_mismatch(2.0, &[1.0, 3.0], &[0.5, 1.0], &[2.5, 7.0]), None);
        let wrong = saxpy_mismatch(2.0, &[1.0, 3.0], &[0.5, 1.0], &[2.5, 7.5]).unwrap();
        assert!(wrong.starts_with("y[1] = 7.5"), "{wrong}");
        // c = 0 never escapes; c = 2 escapes after z = 2, 6: two iterations, then |z| > 2.
        assert_eq!(mandelbrot_pixel(0.0, 0.0, 50), 50);
        assert_eq!(mandelbrot_pixel(2.0, 0.0, 50), 2);
        assert_eq!(mandelbrot_mismatch(&[50, 2], 2, 0..1, (0.0, 0.0, 2.0), 50), None);
        assert!(mandelbrot_mismatch(&[50, 3], 2, 0..1, (0.0, 0.0, 2.0), 50).is_some());
        // (x + j) % 13 for x = 12: 12, 0, 1 → 12·1 + 0·10 + 1·100.
        assert_eq!(weigh(&[1, 10, 100], 12), 112);
    }
}
