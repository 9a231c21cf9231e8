// The smallest declaration: values and 1:1 buffers, default balancer.
hetdsl::kernel! {
    /// y = a·x + y.
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    pub struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn main() {
    // Types only: the UI tests do not open devices.
    let _: fn(&Saxpy, usize, f32, &[f32], &mut [f32], i32) -> hetdsl::Result<hetdsl::Report> = Saxpy::run;
    assert_eq!(Saxpy::KERNEL, "saxpy");
    assert!(Saxpy::source().text.contains("__kernel void saxpy"));
}
