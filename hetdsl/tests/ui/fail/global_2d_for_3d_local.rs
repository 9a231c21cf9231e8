// A kernel declared with a 3-D work-group size takes a 3-D global size: a 2-D one does not type.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = [8, 4, 2])]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {
    let rt = hetdsl::Runtime::new().unwrap();
    let (x, mut y) = (vec![0f32; 64], vec![0f32; 64]);
    let _ = saxpy(&rt, [8, 8], 1.0, &x, &mut y, 64);
}
