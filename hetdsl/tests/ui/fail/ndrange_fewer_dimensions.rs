// A 2-D kernel declared over a 1-D NDRange, and one whose helper reads dimension 2 declared
// 2-D: `get_global_id(1)` is 0 for every work-item of a 1-D launch, so the kernel computed the
// wrong elements with no error. Used to compile.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/ndrange.cl", local = 64)]
    struct Transpose {
        fn transpose(#[input(1:1)] input: &[f32], #[output(1:1)] out: &mut [f32], width: i32, height: i32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/ndrange.cl", local = [8, 8])]
fn planes(#[output(1:1)] out: &mut [f32]);

fn main() {}
