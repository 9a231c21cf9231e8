//! The README's DSL example: y = a·x + y declared with `kernel!`, checked against
//! kernels/saxpy.cl at compile time, co-executed on every device.
//! Run: `cargo run --example dsl_saxpy`.

hetdsl::kernel! {
    #[kernel(file = "kernels/saxpy.cl", local = 64, balancer = "dynamic:64")]
    struct Saxpy {
        fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32]);
    }
}

fn main() -> hetdsl::Result<()> {
    let (x, mut y) = (vec![1.0f32; 1 << 20], vec![2.0f32; 1 << 20]);
    let saxpy = Saxpy::new(&hetdsl::Runtime::new()?)?; // built once for every device
    let report = saxpy.run(x.len(), 3.0, &x, &mut y)?; // global size, then the kernel's arguments
    assert!(y.iter().all(|v| *v == 5.0));
    println!("{}", report.table());
    Ok(())
}
