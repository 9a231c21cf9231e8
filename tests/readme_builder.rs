//! The README's tour of the launch builder and of the report, run as written (the block in the
//! README must appear here line for line, so the two cannot drift apart), its outputs checked
//! against CPU loops on PoCL's two CPU devices.

/// What the tour computed, for the checks.
struct Outputs {
    v: Vec<f32>,
    sums: Vec<u32>,
    found: Vec<u32>,
    bins: Vec<u32>,
    w: Vec<f32>,
    devices: usize,
    report: hetdsl::Report,
}

// Kept as the README writes it (rustfmt would break its lines differently).
#[rustfmt::skip]
fn tour() -> hetdsl::Result<Outputs> {
    use hetdsl::balance::Dynamic;
    use hetdsl::{KernelSource, Merge, Pattern, Runtime};

    let rt = Runtime::new()?;
    let program = rt.program(&KernelSource::from_file("kernels/tour.cl", &[])?)?;
    let n = 64 * 32;
    let values: Vec<u32> = (0..n as u32).collect();

    // inout: read and written in place, split 1:1 (`Pattern::ONE_TO_ONE`).
    let mut v = vec![1.5f32; n];
    program.launch("scale").global(&[n]).local(&[64])
        .inout(&mut v, Pattern::ONE_TO_ONE).scalar(2.0f32).run()?;

    // output: only written, every element of each package's range (an element the kernel does
    // not write comes back undefined: a kernel that leaves some as they were needs inout; verify()
    // says so). Pattern::ratio(a, b): a elements per b work-items (None if a side is 0).
    // local_buffer::<T>(n): a __local buffer of n elements per work-group.
    let mut sums = vec![0u32; n / 64];
    program.launch("group_sum").global(&[n]).local(&[64])
        .input(&values, Pattern::ONE_TO_ONE)
        .output(&mut sums, Pattern::ratio(1, 64).unwrap())
        .local_buffer::<u32>(64)
        .run()?;

    // local_buffer_per_item::<T>(k): k elements per work-item, following .local().
    // balancer: any hetdsl::Balancer (Sigmoid by default). on_devices: positions in program.devices().
    let report = program.launch("group_sum").global(&[n]).local(&[64])
        .input(&values, Pattern::ONE_TO_ONE)
        .output(&mut sums, Pattern::ratio(1, 64).unwrap())
        .local_buffer_per_item::<u32>(1)
        .balancer(Box::new(Dynamic::packages(8)))
        .on_devices(&[0, 1])
        .run()?;

    // Pattern::Whole: every device reads all of it (inputs only).
    let table: Vec<u32> = (0..10).map(|t| t * 100).collect();
    let mut found = vec![0u32; n];
    program.launch("lookup").global(&[n]).local(&[64])
        .input(&table, Pattern::Whole).scalar(10u32)
        .input(&values, Pattern::ONE_TO_ONE).output(&mut found, Pattern::ONE_TO_ONE)
        .run()?;

    // reduce: every device writes the whole buffer, from 0 for a sum and from your values
    // for the others; the copies are combined into yours (Merge::Sum, Max, Min, Or, And).
    let mut bins = vec![0u32; 16];
    program.launch("histogram").global(&[n]).local(&[64])
        .input(&values, Pattern::ONE_TO_ONE).reduce(&mut bins, Merge::Sum).scalar(16u32)
        .run()?;

    // groups: only these work-groups (rows of them in 2-D); the rest of the output is untouched.
    let mut w = vec![1.0f32; n];
    program.launch("scale").global(&[n]).local(&[64])
        .inout(&mut w, Pattern::ONE_TO_ONE).scalar(3.0f32).groups(0..4).run()?;

    // The report: what ran where, and how well.
    println!("{} with {}: {} work-groups", report.kernel, report.balancer, report.total_groups);
    for d in &report.devices {
        // d.kind: Cpu, Gpu or Accelerator; d.fault: why it stopped early, if it did
        println!("{} ({:?}): {} packages, {} groups, busy {:.4} s, done at {:.4} s, fault {:?}",
            d.name, d.kind, d.packages, d.groups, d.busy_seconds, d.finish_seconds, d.fault);
    }
    for t in &report.trace {
        // host_start/host_end: seconds since the run began; written/read: bytes moved (and time)
        println!("device {} groups {}..{} kernel {:?} s, {} B in, {} B out, merged {}",
            t.device, t.package.offset, t.package.end(), t.kernel_seconds,
            t.written.bytes, t.read.bytes, t.merged);
    }
    println!("ROI {:.4} s, whole call {:.4} s, balance {:.2}", report.roi_seconds,
        report.binary_seconds, report.balance);
    println!("re-runs after faults {:?}, back-ups {:?}", report.faults, report.backups);
    // speedup, smax, efficiency: None until compare_with_single_device(each device alone's ROI)
    let mut compared = report.clone();
    compared.compare_with_single_device(&[0.02, 0.03])?; // a positive time per device
    println!("speedup {:?}, Smax {:?}, efficiency {:?}", compared.speedup, compared.smax,
        compared.efficiency);
    println!("{}\n{}", report.table(), report.to_json());
    let devices = report.devices.len();
    Ok(Outputs { v, sums, found, bins, w, devices, report })
}

#[test]
fn the_tour_runs_and_each_output_matches_a_cpu_loop() {
    let out = tour().expect("the tour runs");
    let n = 64 * 32;
    assert!(out.v.iter().all(|x| *x == 3.0));
    let want: Vec<u32> =
        (0..n as u32).collect::<Vec<_>>().chunks(64).map(|c| c.iter().sum()).collect();
    assert_eq!(out.sums, want);
    let keys = 0..n as u32;
    assert!(out.found.iter().zip(keys).all(|(f, k)| *f == (k % 10) * 100));
    assert_eq!(out.bins, vec![n as u32 / 16; 16]);
    assert!(out.w[..4 * 64].iter().all(|x| *x == 3.0), "groups 0..4 scaled");
    assert!(out.w[4 * 64..].iter().all(|x| *x == 1.0), "the rest untouched");
    assert_eq!(out.devices, 2, "on_devices(&[0, 1])");
    assert_eq!(out.report.total_groups, 32);
    let merged: u64 = out.report.trace.iter().filter(|t| t.merged).map(|t| t.package.len).sum();
    assert_eq!(merged, 32);
}

#[test]
fn the_readme_shows_this_tour_line_for_line() {
    let readme = include_str!("../README.md");
    let start = readme.find("<!-- tour: tests/readme_builder.rs -->").expect("the tour's marker");
    let block = &readme[start..];
    let block = &block[block.find("```rust\n").expect("a rust block") + 8..];
    let block = &block[..block.find("```").expect("its end")];
    let here: Vec<&str> = include_str!("readme_builder.rs").lines().map(str::trim).collect();
    let mut at = 0;
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match here[at..].iter().position(|l| *l == line) {
            Some(k) => at += k + 1,
            None => panic!("README line not in the test, in order: {line}"),
        }
    }
}
