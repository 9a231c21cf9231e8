// A __local buffer lives on the device; it cannot be a host slice.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/tile2d.cl", local = [16, 16], include = "tests/ui/kernels/include")]
    struct Expand4 {
        fn expand4(#[input(1:1)] input: &[f32], #[output(4:1)] out: &mut [f32], #[local] tile: &mut [f32], width: u32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/tile2d.cl", local = [16, 16], include = "tests/ui/kernels/include")]
fn expand4(#[input(1:1)] input: &[f32], #[output(4:1)] out: &mut [f32], #[input(1:1)] tile: &[f32], width: u32);

fn main() {}
