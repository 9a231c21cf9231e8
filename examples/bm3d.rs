//! A BM3D-style block-matching filter on its own: co-executed on every device, checked against the
//! CPU reference, and writes `bm3d.png`. The kernel is declared with `hetdsl::kernel!` as
//! `Bm3dKernel` in `src/samples/bm3d.rs` (checked against `kernels/bm3d.cl` at compile time); that
//! module also holds the input generator, the CPU reference and the tolerance rule, shared with the
//! suite and the CI test.
//!
//! `cargo run --release --example bm3d -- [--size small|paper] [--balancer NAME]
//! [--devices all|cpu|gpu|0,2] [--out FILE.png]`

fn main() -> std::process::ExitCode {
    hetdsl_samples::harness::example::main_for("bm3d")
}
