// `out + off` is passed to `put_twice`, which passes it on to `put`, which writes it: as an
// input it would never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/hidden_writes.cl", local = 64)]
    struct Hidden {
        fn in_helper(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32], off: i32);
    }
}

fn main() {}
