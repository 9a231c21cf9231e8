// A 3-D work-group size makes a 3-D NDRange: `#[coexec]`'s function and `kernel!`'s `run` take
// `global: [usize; 3]`.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = [8, 4, 2])]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = [4, 4, 4])]
    struct Volume {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn main() {
    let _: fn(&hetdsl::Runtime, [usize; 3], f32, &[f32], &mut [f32], i32) -> hetdsl::Result<hetdsl::Report> = saxpy;
    let _: fn(&Volume, [usize; 3], f32, &[f32], &mut [f32], i32) -> hetdsl::Result<hetdsl::Report> = Volume::run;
}
