// `or`/`and` are bitwise: not for `float` or `double`; and a vector (or struct) element is not
// reduced as a whole by any merge.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct Total {
        fn total(#[input(1:1)] x: &[f32], #[output(whole, merge = "or")] sum: &mut [f32], #[inout(whole, merge = "and")] best: &mut [f64]);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/merge.cl", local = 64)]
    struct Vectors {
        fn vectors(#[input(1:1)] x: &[f32], #[output(whole, merge = "sum")] acc: &mut [[f32; 4]]);
    }
}

fn main() {}
