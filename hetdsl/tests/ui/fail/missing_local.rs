// Without `local` the work-group size, and so the NDRange's dimensions, are unknown.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl")]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {}
