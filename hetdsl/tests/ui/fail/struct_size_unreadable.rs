// Without `-D ORDER`, `int indices[ORDER + 1]` has no size: the message says so, at the
// struct, instead of calling `Poly` undefined.
#[repr(C)]
#[derive(Clone, Copy, Debug, hetdsl::Pod)]
pub struct Poly {
    pub indices: [i32; 4],
    pub weights: [f32; 6],
}

#[hetdsl::coexec(file = "tests/ui/kernels/poly.cl", local = 32)]
fn eval_poly(#[input(1:1)] polys: &[Poly], #[output(1:1)] out: &mut [f32]);

fn main() {}
