//! 3-D stencil on its own: one 7-point sweep over a 3-D NDRange, split along z in slabs of
//! work-groups, co-executed on every device and checked against the CPU reference. The kernel
//! is declared in `src/samples/stencil3d.rs` (checked against `kernels/stencil3d.cl` at compile
//! time).
//!
//! `cargo run --release --example stencil3d -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("stencil3d")
}
