// A type alias in a declaration stands for the type it names, so it must name the primitive
// the kernel's parameter needs: `Real = f64` would pass `double`s where `saxpy` reads `float`s,
// `Index = u32` an unsigned count for its `int`. A struct is no alias of a primitive either.
type Real = f64;
type Index = u32;

#[derive(Clone, Copy)]
struct Meters(f32);

hetdsl::kernel! {
    #[kernel(file = "tests/ui/kernels/saxpy.cl", local = 64)]
    struct Saxpy {
        fn saxpy(a: Real, #[input(1:1)] x: &[Meters], #[inout(1:1)] y: &mut [Real], n: Index);
    }
}

fn main() {}
