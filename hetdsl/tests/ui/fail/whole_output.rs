// An output cannot be `whole`: each device writes its own part.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(whole)] y: &mut [f32], n: i32);
    }
}

fn main() {}
