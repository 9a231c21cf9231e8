// Pattern sides that name an integer scalar parameter (`cols:1`) or a const in scope (`1:ONE`),
// in `kernel!` and `#[coexec]`.
const ONE: usize = 1;

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/rows.cl", local = 64)]
    struct Rows {
        fn rows(#[input(cols:1)] a: &[f32], #[output(1:ONE)] y: &mut [f32], cols: i32, scale: f32, #[local(per_item = 1)] tmp: [f32], shape: [u32; 4]);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/rows.cl", local = 64)]
fn rows(#[input(cols:ONE)] a: &[f32], #[output(ONE:1)] y: &mut [f32], cols: i32, scale: f32, #[local(per_item = 1)] tmp: [f32], shape: [u32; 4]);

// A side naming a parameter spelled as a raw identifier.
hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/rows.cl", local = 64)]
    struct RawRows {
        fn rows(#[input(r#loop:1)] a: &[f32], #[output(1:1)] y: &mut [f32], r#loop: i32, scale: f32, #[local(per_item = 1)] tmp: [f32], shape: [u32; 4]);
    }
}

fn main() {
    let _: fn(&Rows, usize, &[f32], &mut [f32], i32, f32, [u32; 4]) -> hetdsl::Result<hetdsl::Report> = Rows::run;
    assert_eq!(Rows::PARAMETERS, ["a", "y", "cols", "scale", "tmp", "shape"]);
    assert_eq!(rows::PARAMETERS, Rows::PARAMETERS);
}
