//! Kernel resources from NVIDIA's OpenCL build log.
//!
//! Built with `-cl-nv-verbose` (the engine adds it on NVIDIA platforms), the log carries ptxas'
//! report for every kernel (as NVIDIA's driver 580 printed it on an H200):
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
        let Some(body) = ptxas_body(line) else {
            continue;
        };
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
            let Some((name, usage)) = entry.as_mut() else {
                continue;
            };
            if properties_of.as_deref() == Some(name.as_str()) {
                for item in body.split(',') {
                    set(&mut usage.stack_frame_bytes, amount(item, &["bytes", "stack", "frame"]));
                    set(&mut usage.spill_store_bytes, amount(item, &["bytes", "spill", "stores"]));
                    set(&mut usage.spill_load_bytes, amount(item, &["bytes", "spill", "loads"]));
                }
            }
        } else if body.starts_with("Used ") {
            let Some((name, mut usage)) = entry.take() else {
                continue;
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The log NVIDIA's OpenCL printed on an H200 (driver 580, `-cl-nv-verbose`).
    const H200_LOG: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 20 registers, used 1 barriers, 1028 bytes smem
ptxas info    : Compile time = 20.590 ms
";

    #[test]
    fn reads_the_h200_log() {
        let usage = parse_nv_verbose(H200_LOG);
        assert_eq!(usage.len(), 1);
        let k = &usage["k"];
        assert_eq!((k.registers, k.shared_bytes, k.barriers), (20, 1028, Some(1)));
        assert_eq!(k.target.as_deref(), Some("sm_90a"));
        assert_eq!(
            (k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes),
            (Some(0), Some(0), Some(0))
        );
        assert_eq!(k.constant_bytes, None);
    }

    #[test]
    fn reads_several_kernels_and_older_formats() {
        let log = "\
ptxas info    : Compiling entry function 'scale' for 'sm_90a'
ptxas info    : Function properties for scale
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Compiling entry function 'reduce' for 'sm_52'
ptxas info    : Function properties for helper
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Function properties for reduce
ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 37 registers, 4096 bytes smem, 344 bytes cmem[0], 8 bytes cmem[2]
";
        let usage = parse_nv_verbose(log);
        assert_eq!(usage.len(), 2);
        let scale = &usage["scale"];
        assert_eq!((scale.registers, scale.shared_bytes, scale.barriers), (10, 0, Some(0)));
        let reduce = &usage["reduce"];
        assert_eq!((reduce.registers, reduce.shared_bytes, reduce.barriers), (37, 4096, None));
        assert_eq!(reduce.constant_bytes, Some(344));
        // The helper's properties belong to the helper, not to the kernel.
        assert_eq!((reduce.stack_frame_bytes, reduce.spill_store_bytes), (Some(32), Some(0)));
        assert_eq!(reduce.target.as_deref(), Some("sm_52"));
    }

    #[test]
    fn a_cache_hit_log_has_nothing() {
        assert!(parse_nv_verbose("").is_empty());
        assert!(parse_nv_verbose("warning: unused variable 'x'\n").is_empty());
        // An entry whose Used line is missing is not reported with made-up numbers.
        assert!(parse_nv_verbose("ptxas info    : Compiling entry function 'k' for 'sm_90'\n")
            .is_empty());
    }
}
