//! A 2-D Taylor approximation (2-D NDRange) on its own: co-executed on every device, checked
//! against the CPU reference. The kernel is declared with `hetdsl::kernel!` as `TaylorKernel` in
//! `src/samples/taylor.rs` (checked against `kernels/taylor.cl` at compile time); that module also
//! holds the input generator, the CPU reference and the tolerance rule, shared with the suite and
//! the CI test.
//!
//! `cargo run --release --example taylor -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("taylor")
}
