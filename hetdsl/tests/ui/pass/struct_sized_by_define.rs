// `int indices[ORDER + 1]` with `-D ORDER=3` is `[i32; 4]`; the `extern "C"` wrapper is read.
#[repr(C)]
#[derive(Clone, Copy, Debug, hetdsl::Pod)]
pub struct Poly {
    pub indices: [i32; 4],
    pub weights: [f32; 6],
}

#[hetdsl::coexec(file = "tests/ui/kernels/poly.cl", local = 32, defines = ["ORDER=3"])]
fn eval_poly(#[input(1:1)] polys: &[Poly], #[output(1:1)] out: &mut [f32]);

fn main() {
    let _ = eval_poly;
}
