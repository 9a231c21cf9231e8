// A named constant sizes the __local buffer: the macro cannot evaluate it, so the compiler
// compares it with the work-group size (64) and refuses 32.
const HALF: usize = 32;

#[hetdsl::coexec(file = "tests/ui/kernels/scratch.cl", local = 64)]
fn stage(#[inout(1:1)] x: &mut [f32], #[local] scratch: [f32; HALF]);

fn main() {}
