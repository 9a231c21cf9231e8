//! The `taylor` sample on its own: co-executed on every device, checked against its CPU
//! reference. See `hetdsl_samples::samples::taylor` and `kernels/taylor.cl`.
//! Flags: `--size small|paper --balancer NAME --devices all|cpu|gpu|0,2 --out FILE.png`.

fn main() -> std::process::ExitCode {
    hetdsl_samples::example::main_for("taylor")
}
