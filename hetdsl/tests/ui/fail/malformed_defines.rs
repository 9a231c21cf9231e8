// Defines must be `NAME` or `NAME=VALUE`; a `-D` in `options` needs a name too.
hetdsl::kernel! {
    #[kernel(
        file = "tests/ui/kernels/saxpy.cl",
        local = 64,
        defines = ["BLOCK=16", "2FAST", "A B=1"],
        options = "-cl-mad-enable -D"
    )]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
    }
}

#[hetdsl::coexec(file = "tests/ui/kernels/saxpy.cl", local = 64, defines = "=1")]
fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);

fn main() {}
