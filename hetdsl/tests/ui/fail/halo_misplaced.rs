// `halo = r` widens a 1:1 input: not on an output, not on another pattern, not zero, once.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct OnOutput {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1, halo = 1)] y: &mut [f32], n: i32);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct OnWhole {
        fn saxpy(a: f32, #[input(whole, halo = 2)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Zero {
        fn saxpy(a: f32, #[input(1:1, halo = 0)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Twice {
        fn saxpy(a: f32, #[input(1:1, halo = 1, halo = 1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn main() {}
