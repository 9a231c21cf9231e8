//! Matrix-vector product on its own: y = A·x with A split by rows through the pattern `cols:1`,
//! whose side is the kernel's `cols` parameter, co-executed on every device and checked against
//! the CPU reference. The kernel is declared in `src/samples/matvec.rs` (checked against
//! `kernels/matvec.cl` at compile time).
//!
//! `cargo run --release --example matvec -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("matvec")
}
