//! The occupancy lower bound of every kernel on every device.
//!
//! ```text
//! cargo run --release --example occupancy                  # kernels/*.cl + a built-in kernel
//! cargo run --release --example occupancy -- a.cl b.cl     # these files + the built-in kernel
//! cargo run --release --example occupancy -- --wg 128      # one work-group size for all
//! ```
//!
//! For each device and kernel it prints what NVIDIA's build log says the kernel uses (registers,
//! static local memory, barriers), the work-groups resident per compute unit (SM, CU, core),
//! the resource that limits them, and the bound: the fewest work-groups that fill the device.
//! The work-group size is `--wg`, else the kernel's `reqd_work_group_size`, else 256. Local
//! memory is the static `__local` memory ptxas reports; `__local` arguments are not set here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use hetdsl::occupancy::{self, parse_nv_verbose, KernelResources};
use hetdsl::{DeviceInfo, KernelSource, Runtime};

/// Work-group size used when neither `--wg` nor `reqd_work_group_size` gives one.
const DEFAULT_WORK_GROUP_SIZE: u32 = 256;

/// Printed even when `kernels/` is empty: one kernel with a static `__local` array and
/// barriers, one without.
const BUILTIN: &str = r#"
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void block_sum(__global const float* x, __global float* sums) {
    __local float part[256];
    size_t l = get_local_id(0);
    part[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = 128; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) sums[get_global_id(0) / 256] = part[0];
}

__kernel void saxpy(float a, __global const float* x, __global float* y) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"#;

fn main() -> ExitCode {
    // NVIDIA's OpenCL keeps compiled kernels in a JIT cache (~/.nv/ComputeCache); a build that
    // hits it runs no ptxas, and its build log then has none of the `ptxas info : Used N
    // registers` lines this example reads. Disabling the cache for this process makes every
    // build print them. The driver reads the variable when it is loaded, so it must be set
    // before the first OpenCL call, i.e. here, before anything else; a value the user set wins.
    if std::env::var_os("CUDA_CACHE_DISABLE").is_none() {
        std::env::set_var("CUDA_CACHE_DISABLE", "1");
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("occupancy: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The occupancy lower bound of every kernel on every device.
#[derive(Debug, Parser)]
#[command(name = "occupancy")]
struct Options {
    /// One work-group size for every kernel [default: the kernel's `reqd_work_group_size`,
    /// else 256]
    #[arg(long = "wg", value_name = "N")]
    work_group_size: Option<u32>,
    /// OpenCL C files to read, besides a built-in kernel [default: kernels/*.cl]
    #[arg(value_name = "FILE.cl")]
    files: Vec<PathBuf>,
}

/// `kernels/*.cl` of the current directory, else of the repository this example was built in.
fn suite_files() -> Vec<PathBuf> {
    let here = Path::new("kernels");
    let dir = if here.is_dir() {
        here.to_path_buf()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let options = Options::parse();
    let files = if options.files.is_empty() { suite_files() } else { options.files.clone() };
    let mut sources = vec![KernelSource::from_text("builtin.cl", BUILTIN)];
    for f in &files {
        // ocl-include resolves a file only by an absolute path.
        let f = &std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
        // Shared headers live in `include/` beside the kernels, when there is one.
        let include = f.parent().unwrap_or(Path::new(".")).join("include");
        let include_dirs: Vec<PathBuf> = include.is_dir().then_some(include).into_iter().collect();
        match KernelSource::from_file(f, &include_dirs) {
            Ok(s) => sources.push(s),
            Err(e) => eprintln!("skipped {}: {e}", f.display()),
        }
    }

    let rt = Runtime::new()?;
    let cache = std::env::var("CUDA_CACHE_DISABLE").unwrap_or_default();
    println!("CUDA_CACHE_DISABLE={cache}");
    for d in rt.devices() {
        print_device(&d);
    }
    for source in &sources {
        let program = match rt.program(source) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{}: {e}", source.name);
                continue;
            }
        };
        println!("\n{}", source.name);
        for (device, log) in program.build_logs() {
            let usage = parse_nv_verbose(&log);
            for kernel in program.kernel_names() {
                let wg = options
                    .work_group_size
                    .or_else(|| reqd_work_group_size(&source.text, kernel))
                    .unwrap_or(DEFAULT_WORK_GROUP_SIZE);
                let mut resources = KernelResources::new(wg);
                let used = match usage.get(kernel) {
                    Some(u) => {
                        resources = resources.with_nv_usage(u);
                        format!(
                            "regs {:>3}  smem {:>6} B  barriers {}",
                            u.registers,
                            u.shared_bytes,
                            u.barriers.map_or("?".into(), |b| b.to_string())
                        )
                    }
                    None if device.nvidia.is_some() => "no ptxas lines in the build log".into(),
                    None => "-".into(),
                };
                let o = occupancy::occupancy(&device, &resources);
                println!(
                    "  [{}] {:<24} wg {:>4}  {:<38} {:>3} WG/CU ({:?})  bound {:>6} WGs = {} work-items",
                    device.index,
                    kernel,
                    wg,
                    used,
                    o.groups_per_compute_unit,
                    o.limiter,
                    o.min_groups,
                    o.min_groups * wg as u64,
                );
                if o.limits != occupancy::Limits::default() {
                    println!("      per-resource limits: {}", describe_limits(&o.limits));
                }
                for a in &o.assumptions {
                    println!("      assumed: {a}");
                }
            }
        }
    }
    Ok(())
}

fn print_device(d: &DeviceInfo) {
    let nominal = occupancy::nominal(d);
    let cc = d
        .nvidia
        .as_ref()
        .map(|n| format!(", CC {}.{}", n.compute_capability.0, n.compute_capability.1))
        .unwrap_or_default();
    println!(
        "device {}: {} ({}, {:?}{cc}), {} compute units at {} MHz, nominal {:.0} GFLOP/s \
         ({} FP32 lanes per unit)",
        d.index,
        d.name,
        d.platform,
        d.kind,
        d.compute_units,
        d.clock_mhz,
        nominal.gflops,
        nominal.fp32_lanes_per_unit
    );
    for a in &nominal.assumptions {
        println!("      assumed: {a}");
    }
}

fn describe_limits(l: &occupancy::Limits) -> String {
    let parts = [
        ("warps", l.warps),
        ("registers", l.registers),
        ("local memory", l.shared_memory),
        ("blocks", l.blocks),
        ("barriers", l.barriers),
    ];
    parts
        .iter()
        .map(|(name, v)| format!("{name} {}", v.map_or("-".to_string(), |v| v.to_string())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The product of `kernel`'s `reqd_work_group_size(x, y, z)` in `source`, if it has one: the
/// attribute sits between the end of the previous declaration and the kernel's name.
fn reqd_work_group_size(source: &str, kernel: &str) -> Option<u32> {
    let mut from = 0;
    while let Some(at) = source[from..].find(kernel).map(|i| from + i) {
        from = at + kernel.len();
        let before_ok = !source[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after = source[from..].trim_start();
        if !before_ok || !after.starts_with('(') {
            continue;
        }
        let start = source[..at].rfind([';', '}']).map_or(0, |i| i + 1);
        let head = &source[start..at];
        if !head.contains("kernel") {
            continue;
        }
        let attr = head.find("reqd_work_group_size")?;
        let open = head[attr..].find('(')? + attr + 1;
        let close = head[open..].find(')')? + open;
        let dims: Option<Vec<u32>> =
            head[open..close].split(',').map(|d| d.trim().parse().ok()).collect();
        return dims.map(|d| d.iter().product());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::reqd_work_group_size;

    #[test]
    fn finds_the_attribute_of_the_named_kernel_only() {
        let src = "void tile_helper(float* p) { tile(p); }\n\
            __kernel void plain(__global float* y) { y[0] = 1; }\n\
            __kernel __attribute__((reqd_work_group_size(64, 2, 1)))\n\
            void tile(__global float* y) { y[0] = 2; }\n\
            kernel __attribute__((reqd_work_group_size(16,16,1))) void tile2(global float* y) {}\n";
        assert_eq!(reqd_work_group_size(src, "tile"), Some(128));
        assert_eq!(reqd_work_group_size(src, "tile2"), Some(256));
        assert_eq!(reqd_work_group_size(src, "plain"), None);
        assert_eq!(reqd_work_group_size(src, "absent"), None);
    }
}
