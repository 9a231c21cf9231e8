// `local = 64` for a kernel that requires work-groups of 32: every launch failed at run time.
// Used to compile.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/ndrange.cl", local = 64)]
    struct FixedGroup {
        fn fixed_group(#[output(1:1)] out: &mut [f32]);
    }
}

fn main() {}
