// `out` is kept in a struct's member (`v.p = out`) and written through it (`v.p[i] = ..`): as an
// input it would never be copied back.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/held_writes.cl", local = 64)]
    struct Held {
        fn in_struct(#[input(1:1)] src: &[f32], #[input(1:1)] out: &[f32]);
    }
}

fn main() {}
