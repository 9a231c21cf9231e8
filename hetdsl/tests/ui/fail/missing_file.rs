hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/no_such_file.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn main() {}
