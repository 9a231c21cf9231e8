//! Kernel resources from NVIDIA's OpenCL build log.
//!
//! Built with `-cl-nv-verbose` (the engine adds it on NVIDIA platforms), the log carries ptxas'
//! report for every kernel (research/occupancy.md §2.1, driver 580 on an H200):
//!
//! ```text
//! ptxas info    : Compiling entry function 'k' for 'sm_90a'
//! ptxas info    : Function properties for k
//! ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ptxas info    : Used 20 registers, used 1 barriers, 1028 bytes smem
//! ```
//!
//! Older ptxas versions print `Used N registers, M bytes smem, K bytes cmem[0]`, and kernels
//! without local memory have no `smem` item, so each item is read on its own. A log from a
//! JIT-cache hit has no ptxas lines at all: set `CUDA_CACHE_DISABLE=1` before the first
//! OpenCL call when the numbers are needed.

use std::collections::HashMap;

/// What ptxas reported for one kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NvKernelUsage {
    /// Registers per work-item (`Used N registers`).
    pub registers: u32,
    /// Static shared (`__local`) memory, bytes (`M bytes smem`; 0 when absent).
    pub shared_bytes: u64,
    /// Hardware barriers (`used K barriers`), when printed.
    pub barriers: Option<u32>,
    /// Constant bank 0 (`bytes cmem[0]`), when printed.
    pub constant_bytes: Option<u64>,
    /// Per-thread stack frame, spill stores and spill loads, bytes, when printed.
    pub stack_frame_bytes: Option<u64>,
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
    /// The target ptxas compiled for, e.g. `sm_90a`.
    pub target: Option<String>,
}

/// Every kernel's usage found in `log`, keyed by kernel name. Kernels whose `Used ... registers`
/// line is missing are left out; a log without ptxas lines gives an empty map.
pub fn parse_nv_verbose(log: &str) -> HashMap<String, NvKernelUsage> {
    let mut found = HashMap::new();
    // The entry being compiled, and its usage so far.
    let mut entry: Option<(String, NvKernelUsage)> = None;
    // The function whose "Function properties" block is being read.
    let mut properties_of: Option<String> = None;
    for line in log.lines() {
        let Some(body) = ptxas_body(line) else { continue };
        if let Some(rest) = body.strip_prefix("Compiling entry function") {
            let mut quoted = rest.split('\'').skip(1).step_by(2);
            if let Some(name) = quoted.next() {
                let usage = NvKernelUsage {
                    target: quoted.next().map(str::to_string),
                    ..Default::default()
                };
                entry = Some((name.to_string(), usage));
            }
            properties_of = None;
        } else if let Some(name) = body.strip_prefix("Function properties for") {
            properties_of = Some(name.trim().to_string());
        } else if body.contains("bytes stack frame") {
            let Some((name, usage)) = entry.as_mut() else { continue };
            if properties_of.as_deref() == Some(name.as_str()) {
                for item in body.split(',') {
                    set(&mut usage.stack_frame_bytes, amount(item, &["bytes", "stack", "frame"]));
                    set(&mut usage.spill_store_bytes, amount(item, &["bytes", "spill", "stores"]));
                    set(&mut usage.spill_load_bytes, amount(item, &["bytes", "spill", "loads"]));
                }
            }
        } else if body.starts_with("Used ") {
            let Some((name, mut usage)) = entry.take() else { continue };
            let mut registers = None;
            for item in body.split(',') {
                set(&mut registers, amount(item, &["registers"]));
                set(&mut usage.barriers, amount(item, &["barriers"]));
                if let Some(b) = amount(item, &["bytes", "smem"]) {
                    usage.shared_bytes = b;
                }
                set(&mut usage.constant_bytes, amount(item, &["bytes", "cmem[0]"]));
            }
            if let Some(r) = registers {
                usage.registers = r;
                found.insert(name, usage);
            }
        }
    }
    found
}

/// The text after `ptxas info    :` or `ptxas         .`, trimmed; `None` for other lines.
fn ptxas_body(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("ptxas")?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("info").unwrap_or(rest).trim_start();
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('.'))?;
    Some(rest.trim())
}

/// The number before `unit` at the end of `item` ("20" in "Used 20 registers").
fn amount<T: std::str::FromStr>(item: &str, unit: &[&str]) -> Option<T> {
    let words: Vec<&str> = item.split_whitespace().collect();
    let n = words.len().checked_sub(unit.len() + 1)?;
    (words[n + 1..] == *unit).then(|| words[n].parse().ok()).flatten()
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}
