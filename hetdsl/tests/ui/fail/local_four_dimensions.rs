// An NDRange has at most three dimensions, so a work-group size of four is refused.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = [8, 8, 4, 2])]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {}
