// A 2-D NDRange (global is `[usize; 2]`), a `__local` buffer sized in the declaration, a 4:1
// output, and types (`REAL`, `count_t`) that a header defines with #define and typedef.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/tile2d.cl", local = [16, 16], include = "tests/ui/kernels/include")]
    struct Expand4 {
        fn expand4(#[input(1:1)] input: &[f32], #[output(4:1)] out: &mut [f32], #[local] tile: [f32; 16 * 16], width: u32);
    }
}

fn main() {
    // `tile` is not an argument of `run`: it lives on the device.
    let _: fn(&Expand4, [usize; 2], &[f32], &mut [f32], u32) -> hetdsl::Result<hetdsl::Report> = Expand4::run;
    assert!(Expand4::source().text.contains("typedef unsigned int count_t;"));
}
