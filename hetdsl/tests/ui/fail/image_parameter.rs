// Images and samplers cannot be split among devices: refused whatever the Rust type.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/image.cl", local = 64)]
    struct Blur {
        fn blur(#[input(whole)] src: &[f32], #[output(1:1)] dst: &mut [f32]);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/image.cl", local = 64)]
fn sample(src: u64, s: u32, #[output(1:1)] dst: &mut [f32]);

fn main() {}
