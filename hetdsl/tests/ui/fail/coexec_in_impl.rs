// `#[coexec]` declares a function and a module of the same name, which only a module holds: on
// a method, in an `impl` block, a trait or an `extern` block it gave rustc's errors about the
// generated items ("module is not supported in `trait`s or `impl`s", "`const` items in this
// context need a name"). Each place says where the declaration goes instead.
pub struct Blas;

impl Blas {
    #[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
}

impl Blas {
    /// On a method, with a receiver and a body.
    #[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    pub fn axpy(&self, a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32) {}
}

pub trait Kernels {
    #[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64, name = "saxpy")]
    fn scale(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
}

extern "C" {
    #[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
}

fn main() {}
