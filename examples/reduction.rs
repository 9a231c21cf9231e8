//! Reduction (AMD APP SDK) on its own: one sum per work-group, indexed by `get_group_id` as the
//! SDK writes it, co-executed on every device and checked bit for bit against the CPU reference.
//! The kernel is declared in `src/samples/reduction.rs` (checked against `kernels/reduction.cl`
//! at compile time).
//!
//! `cargo run --release --example reduction -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::example::main_for("reduction")
}
