//! A Gaussian blur on its own: co-executed on every device, checked against the CPU reference, and
//! writes `gaussian.png`. The kernel is declared with `hetdsl::kernel!` as `GaussianKernel` in
//! `src/samples/gaussian.rs` (checked against `kernels/gaussian.cl` at compile time); that module
//! also holds the input generator, the CPU reference and the tolerance rule, shared with the suite
//! and the CI test.
//!
//! `cargo run --release --example gaussian -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2] [--out FILE.png]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("gaussian")
}
