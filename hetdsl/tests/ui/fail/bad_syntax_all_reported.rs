// Syntax mistakes are reported together: an unknown option, a zero pattern, a return type.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64, workgroup = 64)]
fn saxpy(a: f32, #[input(0:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32) -> f32;

fn main() {}
