// `#[cfg]` on a parameter (the kernel takes it in every build) and generics on a `kernel!`
// struct: before, "unknown parameter attribute" and "expected curly braces" on the `<`.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy<T> {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64)]
fn saxpy(
    a: f32,
    #[input(1:1)] x: &[f32],
    #[inout(1:1)] y: &mut [f32],
    #[cfg(feature = "wide")] n: i32,
);

fn main() {}
