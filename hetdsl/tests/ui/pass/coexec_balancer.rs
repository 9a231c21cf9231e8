// `#[coexec]` on a signature, with a balancer chosen in the declaration and a kernel name that
// differs from the Rust one.
#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", name = "saxpy", local = 128, balancer = "dynamic:32")]
pub fn scale_add(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {
    let _: fn(&hetdsl::Runtime, usize, f32, &[f32], &mut [f32], i32) -> hetdsl::Result<hetdsl::Report> = scale_add;
    let _ = scale_add::launch;
    assert_eq!(scale_add::KERNEL, "saxpy");
}
