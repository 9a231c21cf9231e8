// Every declaration names its source and work-group size.
hetdsl::kernel! {
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

#[hetdsl::coexec(local = 64)]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {}
