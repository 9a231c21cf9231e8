// A work-group size whose product overflows: refused on the size, not a panic of the macro.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = [4294967296, 4294967296, 4])]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {}
