// On a session, an #[inout] or #[output] buffer is lent mutably: a shared `&Buffer` is refused,
// as a shared slice is in the one-shot form.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

fn step(k: SaxpyOn<'_>, x: &hetdsl::Buffer<f32>, y: &hetdsl::Buffer<f32>) {
    let _ = k.run(1024, 2.0, x, y, 1024);
}

fn main() {}
