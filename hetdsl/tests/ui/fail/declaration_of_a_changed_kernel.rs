// The declaration written for rows.cl, against the kernel as it changed: each problem on its
// token. A test in the root package loads the same source at run time (`with_source`) and
// expects these messages word for word.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/rows_changed.cl", local = 64)]
    struct Rows {
        fn rows(#[input(cols:1)] a: &[f32], #[output(1:1)] y: &mut [f32], cols: i32, scale: f32, #[local(per_item = 1)] tmp: [f32], shape: [u32; 4]);
    }
}

fn main() {}
