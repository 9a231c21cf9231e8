//! Binomial option pricing (AMD APP SDK BinomialOption) on its own: co-executed on every device,
//! checked against the CPU reference. The kernel is declared with `hetdsl::kernel!` as
//! `BinomialKernel` in `src/samples/binomial.rs` (checked against `kernels/binomial.cl` at compile
//! time); that module also holds the input generator, the CPU reference and the tolerance rule,
//! shared with the suite and the CI test.
//!
//! `cargo run --release --example binomial -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("binomial")
}
