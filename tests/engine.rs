//! The engine on real OpenCL devices (PoCL's `pthread` and `basic` CPU devices in CI): every
//! output pattern, whole inputs, 2-D ranges and build errors, each checked against a plain CPU
//! loop.

use hetdsl::balance::{Balancer, Completion, Next, Package, Setup, Static};
use hetdsl::{Error, KernelSource, Pattern, Program, Report, Runtime};
use std::path::Path;

fn program(file: &str) -> Program {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(
        rt.devices().len() >= 2,
        "these tests co-execute on two devices; run with POCL_DEVICES=\"pthread basic\" (found {:?})",
        rt.devices().iter().map(|d| &d.name).collect::<Vec<_>>()
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels").join(file);
    let source = KernelSource::from_file(&path, &[]).expect("kernel source");
    rt.program(&source).expect("kernel builds")
}

/// Every device ran at least two packages, and the packages tile the range exactly once.
fn assert_coexecuted(r: &Report) {
    for d in &r.devices {
        assert!(
            d.packages >= 2,
            "device {} ran {} package(s):\n{}",
            d.index,
            d.packages,
            r.table()
        );
    }
    let mut covered: Vec<_> = r.trace.iter().map(|t| (t.package.offset, t.package.len)).collect();
    covered.sort();
    let mut next = 0;
    for (o, l) in covered {
        assert_eq!(o, next, "packages must tile the range: {:?}", r.trace);
        next = o + l;
    }
    assert_eq!(next, r.total_groups);
    assert!(r.balance > 0.0 && r.balance <= 1.0);
}

/// A test balancer written against the public trait: `per_device` packages for each device,
/// dealt round-robin, so that every device runs several packages whatever its speed.
struct RoundRobin {
    per_device: u64,
    queues: Vec<Vec<Package>>,
}

fn round_robin(per_device: u64) -> Box<dyn Balancer> {
    Box::new(RoundRobin { per_device, queues: Vec::new() })
}

impl Balancer for RoundRobin {
    fn name(&self) -> String {
        format!("round-robin({})", self.per_device)
    }
    fn start(&mut self, setup: &Setup) -> hetdsl::Result<()> {
        let n = setup.devices.len() as u64;
        let count = (n * self.per_device).min(setup.total_groups);
        let size = setup.total_groups.div_ceil(count);
        self.queues = vec![Vec::new(); n as usize];
        let (mut offset, mut k) = (0, 0);
        while offset < setup.total_groups {
            let len = size.min(setup.total_groups - offset);
            self.queues[(k % n) as usize].insert(0, Package { offset, len });
            offset += len;
            k += 1;
        }
        Ok(())
    }
    fn next(&mut self, device: usize, _now: f64) -> Next {
        self.queues[device].pop().map_or(Next::Done, Next::Run)
    }
    fn completed(&mut self, _done: &Completion) {}
    fn device_lost(&mut self, device: usize) {
        // Hand the lost device's queue to the next device.
        let orphans = std::mem::take(&mut self.queues[device]);
        let heir = (device + 1) % self.queues.len();
        self.queues[heir].extend(orphans);
    }
}

fn lcg(seed: u32, n: usize) -> Vec<u32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            x >> 8
        })
        .collect()
}

#[test]
fn one_to_one_integer_output_is_exact() {
    let p = program("engine.cl");
    let n = 1 << 18;
    let a: Vec<i32> = lcg(1, n).iter().map(|v| (*v % 2000) as i32 - 1000).collect();
    let b: Vec<i32> = lcg(2, n).iter().map(|v| (*v % 2000) as i32 - 1000).collect();
    let mut out = vec![0i32; n];
    let r = p
        .launch("scale_add")
        .global(&[n])
        .local(&[64])
        .input(&a, Pattern::ONE_TO_ONE)
        .input(&b, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .scalar(7i32)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x * 7 + y).collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn one_result_per_work_group() {
    let p = program("engine.cl");
    let (n, lws) = (1 << 18, 128);
    let input: Vec<u32> = lcg(3, n).iter().map(|v| v % 1000).collect();
    let mut sums = vec![0u32; n / lws];
    let r = p
        .launch("group_sum")
        .global(&[n])
        .local(&[lws])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut sums, Pattern::ratio(1, lws as u64).unwrap())
        .local_buffer::<u32>(lws)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> = input.chunks(lws).map(|c| c.iter().sum()).collect();
    assert_eq!(sums, expected);
    assert_coexecuted(&r);
}

#[test]
fn four_results_per_work_item() {
    let p = program("engine.cl");
    let n = 1 << 17;
    let input = lcg(4, n);
    let mut out = vec![0u32; 4 * n];
    let r = p
        .launch("expand4")
        .global(&[n])
        .local(&[32])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> = input
        .iter()
        .flat_map(|&v| [v, v.wrapping_mul(2), v.wrapping_mul(v), v ^ 0x5a5a5a5a])
        .collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn whole_input_reaches_every_device() {
    let p = program("engine.cl");
    let n = 1 << 15;
    let table: Vec<u32> = lcg(5, 997);
    let keys = lcg(6, n);
    let mut out = vec![0u32; n];
    let r = p
        .launch("lookup")
        .global(&[n])
        .local(&[64])
        .input(&table, Pattern::Whole)
        .scalar(table.len() as u32)
        .input(&keys, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ONE_TO_ONE)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| table[(*k % 997) as usize].wrapping_add(i as u32))
        .collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn two_dimensional_ranges_split_into_row_bands() {
    let p = program("engine.cl");
    let (w, h) = (96, 64);
    let mut out = vec![0u32; w * h];
    let r = p
        .launch("coords")
        .global(&[w, h])
        .local(&[16, 4])
        .output(&mut out, Pattern::ONE_TO_ONE)
        .balancer(round_robin(4))
        .run()
        .unwrap();
    let expected: Vec<u32> =
        (0..h).flat_map(|y| (0..w).map(move |x| (y * 1000 + x) as u32)).collect();
    assert_eq!(out, expected);
    assert_coexecuted(&r);
}

#[test]
fn static_split_runs_one_package_per_device() {
    let p = program("engine.cl");
    let n = 1 << 14;
    let input = lcg(7, n);
    let mut out = vec![0u32; 4 * n];
    let r = p
        .launch("expand4")
        .global(&[n])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .output(&mut out, Pattern::ratio(4, 1).unwrap())
        .balancer(Box::new(Static::with_weights(vec![1.0, 3.0]).reversed()))
        .run()
        .unwrap();
    assert_eq!(
        out[4 * 5..4 * 6],
        [
            input[5],
            input[5].wrapping_mul(2),
            input[5].wrapping_mul(input[5]),
            input[5] ^ 0x5a5a5a5a
        ]
    );
    assert_eq!(r.devices.iter().map(|d| d.packages).collect::<Vec<_>>(), vec![1, 1]);
    // Reverse order: device 1 (weight 3) holds the first three quarters.
    let first = r.trace.iter().find(|t| t.package.offset == 0).unwrap();
    assert_eq!((first.device, first.package.len), (1, 192));
}

#[test]
fn build_errors_name_the_original_file_and_line() {
    let rt = Runtime::new().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/broken.cl");
    let source = KernelSource::from_file(&path, &[]).unwrap();
    match rt.program(&source) {
        Err(Error::Build { file, log }) => {
            assert!(file.ends_with("broken.cl"), "{file}");
            assert!(log.contains("broken.cl:5:"), "log should name broken.cl line 5:\n{log}");
            assert!(log.contains("undeclared_identifier"), "{log}");
        }
        Err(e) => panic!("expected a build error, got {e}"),
        Ok(_) => panic!("a broken kernel built"),
    }
}
