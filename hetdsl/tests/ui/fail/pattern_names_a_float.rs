// A pattern side that names a float scalar parameter: a pattern counts elements.

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/rows.cl", local = 64)]
    struct Rows {
        fn rows(#[input(scale:1)] a: &[f32], #[output(1:1)] y: &mut [f32], cols: i32, scale: f32, #[local(per_item = 1)] tmp: [f32], shape: [u32; 4]);
    }
}

fn main() {}
