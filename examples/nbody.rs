//! One N-body step (AMD APP SDK NBody) on its own: co-executed on every device, checked against the
//! CPU reference. The kernel is declared with `hetdsl::kernel!` as `NBodyKernel` in
//! `src/samples/nbody.rs` (checked against `kernels/nbody.cl` at compile time); that module also
//! holds the input generator, the CPU reference and the tolerance rule, shared with the suite and
//! the CI test.
//!
//! `cargo run --release --example nbody -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("nbody")
}
