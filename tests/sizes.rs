//! The boundaries of sizes: ranges of one work-group, a prime number of them, work-groups of one
//! work-item and of the device's largest, odd 2-D and 3-D shapes with a dimension of 1, every
//! kind of pattern over them (ratios both ways, halos reaching both ends, `whole`), under every
//! balancer, one-shot and in sessions. Each output is compared with a plain CPU loop here; a
//! shape a pattern cannot split is an error naming the argument.

mod common;

use common::{every_balancer, lcg};
use hetdsl::{Error, KernelSource, Pattern, Program, Runtime};

/// Each work-item reads the input elements its pattern `IA:IB` gives it and an element of a
/// `whole` table, and writes the output elements its pattern `OA:OB` gives it, over the
/// row-major linear index of the caller's NDRange.
const RATIOS: &str = r#"
__kernel void ratios(__global const uint* in, __global uint* out, __global const uint* table,
                     const uint table_len) {
    const ulong w = get_global_size(0), h = get_global_size(1);
    const ulong l = (get_global_id(2) * h + get_global_id(1)) * w + get_global_id(0);
    uint acc = table[l % table_len];
    for (ulong e = IA * l / IB; e < IA * (l + 1) / IB; e++) acc += in[e] * (uint)(e + 1);
    for (ulong e = OA * l / OB; e < OA * (l + 1) / OB; e++) out[e] = acc ^ (uint)(e * 2654435761u);
}
"#;

fn runtime() -> Runtime {
    let rt = Runtime::new().expect("an OpenCL runtime (install pocl-opencl-icd)");
    assert!(rt.devices().len() >= 2, "run with POCL_DEVICES=\"pthread basic\"");
    rt
}

fn ratios_program(rt: &Runtime, input: (u64, u64), output: (u64, u64)) -> Program {
    let options = format!(
        "-D IA={}UL -D IB={}UL -D OA={}UL -D OB={}UL",
        input.0, input.1, output.0, output.1
    );
    rt.program_with_options(&KernelSource::from_text("ratios.cl", RATIOS), &options)
        .expect("builds")
}

/// The CPU's `ratios` over `items` work-items.
fn ratios_cpu(
    items: u64,
    input: (u64, u64),
    output: (u64, u64),
    inp: &[u32],
    table: &[u32],
) -> Vec<u32> {
    let mut out = vec![0u32; (output.0 * items / output.1) as usize];
    for l in 0..items {
        let mut acc = table[(l % table.len() as u64) as usize];
        for e in input.0 * l / input.1..input.0 * (l + 1) / input.1 {
            acc = acc.wrapping_add(inp[e as usize].wrapping_mul(e as u32 + 1));
        }
        for e in output.0 * l / output.1..output.0 * (l + 1) / output.1 {
            out[e as usize] = acc ^ (e as u32).wrapping_mul(2654435761);
        }
    }
    out
}

/// Work-items per balancing unit: every faster dimension whole, the slowest one's group.
fn items_per_unit(global: &[usize], local: &[usize]) -> u64 {
    let slow = global.len() - 1;
    global[..slow].iter().product::<usize>() as u64 * local[slow] as u64
}

/// The shapes every pattern runs over: (global, local).
fn shapes() -> Vec<(Vec<usize>, Vec<usize>)> {
    vec![
        (vec![1], vec![1]),             // one work-item: buffers of one element
        (vec![64], vec![64]),           // exactly one work-group
        (vec![61 * 64], vec![64]),      // a prime number of work-groups
        (vec![37], vec![1]),            // work-groups of one work-item, a prime count
        (vec![255 * 13], vec![255]),    // Binomial's groups
        (vec![3, 5], vec![1, 1]),       // odd 2-D
        (vec![1, 13], vec![1, 1]),      // 2-D, one column
        (vec![7, 1], vec![7, 1]),       // 2-D, one row, one group
        (vec![12, 10], vec![4, 5]),     // 2-D, two rows of groups
        (vec![5, 1, 7], vec![5, 1, 1]), // 3-D, a height of 1
        (vec![2, 3, 11], vec![1, 3, 1]),
        (vec![1, 1, 5], vec![1, 1, 1]),
        (vec![4, 2, 6], vec![2, 2, 3]),
    ]
}

#[test]
fn every_ratio_over_every_shape_is_exact_or_refused() {
    let rt = runtime();
    let table: Vec<u32> = lcg(7, 13);
    for (input, output) in [((1, 1), (1, 1)), ((1, 1), (4, 1)), ((4, 1), (1, 1)), ((1, 1), (1, 5))]
    {
        let p = ratios_program(&rt, input, output);
        for (global, local) in shapes() {
            let items: u64 = global.iter().product::<usize>() as u64;
            let ipu = items_per_unit(&global, &local);
            let fits =
                |(a, b): (u64, u64)| (a * ipu).is_multiple_of(b) && (a * items).is_multiple_of(b);
            let inp = lcg(items as u32, (input.0 * items / input.1).max(1) as usize);
            for (name, balancer) in every_balancer() {
                let mut out = vec![0u32; (output.0 * items / output.1).max(1) as usize];
                let r = p
                    .launch("ratios")
                    .global(&global)
                    .local(&local)
                    .input(&inp, Pattern::ratio(input.0, input.1).unwrap())
                    .output(&mut out, Pattern::ratio(output.0, output.1).unwrap())
                    .input(&table, Pattern::Whole)
                    .scalar(table.len() as u32)
                    .balancer(balancer)
                    .run();
                let what = format!("{input:?}->{output:?} over {global:?}/{local:?} with {name}");
                match (fits(input) && fits(output), r) {
                    (true, Ok(_)) => {
                        assert_eq!(out, ratios_cpu(items, input, output, &inp, &table), "{what}")
                    }
                    (false, Err(Error::BadArgument { .. })) => {}
                    (_, r) => panic!("{what}: {r:?}"),
                }
            }
        }
    }
}

/// Each work-item adds its `R`-th neighbours (elements, rows or planes away, `row` elements
/// per step) to its own element, where they exist.
const HALO: &str = r#"
__kernel void halo(__global const uint* in, __global uint* out, const ulong row, const ulong n) {
    const ulong w = get_global_size(0), h = get_global_size(1);
    const ulong l = (get_global_id(2) * h + get_global_id(1)) * w + get_global_id(0);
    const ulong reach = R > n / row ? n : R * row;
    uint v = in[l];
    if (l >= reach) v += 3u * in[l - reach];
    if (l + reach < n) v += 5u * in[l + reach];
    out[l] = v;
}
"#;

fn halo_cpu(inp: &[u32], reach: usize) -> Vec<u32> {
    let n = inp.len();
    (0..n)
        .map(|l| {
            let mut v = inp[l];
            if l >= reach {
                v = v.wrapping_add(3u32.wrapping_mul(inp[l - reach]));
            }
            if l.checked_add(reach).is_some_and(|e| e < n) {
                v = v.wrapping_add(5u32.wrapping_mul(inp[l + reach]));
            }
            v
        })
        .collect()
}

#[test]
fn halos_reach_both_ends_of_every_shape_one_shot_and_in_sessions() {
    let rt = runtime();
    for r in [0u64, 1, 2, 1000, u64::MAX] {
        let source = KernelSource::from_text("halo.cl", HALO);
        let p = rt.program_with_options(&source, &format!("-D R={r}UL")).expect("builds");
        let s = p.session().expect("a session");
        for (global, local) in shapes() {
            let n: usize = global.iter().product();
            let row: usize = global[..global.len() - 1].iter().product();
            let inp = lcg(n as u32 + 3, n);
            let want = halo_cpu(&inp, (r as usize).saturating_mul(row));
            let what = format!("halo({r}) over {global:?}/{local:?}");
            for (name, balancer) in every_balancer() {
                let mut out = vec![0u32; n];
                p.launch("halo")
                    .global(&global)
                    .local(&local)
                    .input(&inp, Pattern::halo(r))
                    .output(&mut out, Pattern::ONE_TO_ONE)
                    .scalar(row as u64)
                    .scalar(n as u64)
                    .balancer(balancer)
                    .run()
                    .unwrap_or_else(|e| panic!("{what} with {name}: {e}"));
                assert_eq!(out, want, "{what} with {name}");
            }
            let input = s.buffer_from(&inp).unwrap();
            let mut out = s.buffer::<u32>(n).unwrap();
            for launch in 0..3 {
                s.launch("halo")
                    .global(&global)
                    .local(&local)
                    .input(&input, Pattern::halo(r))
                    .output(&mut out, Pattern::ONE_TO_ONE)
                    .scalar(row as u64)
                    .scalar(n as u64)
                    .run()
                    .unwrap_or_else(|e| panic!("{what}, session launch {launch}: {e}"));
                assert_eq!(out.to_vec().unwrap(), want, "{what}, session launch {launch}");
            }
        }
    }
}

#[test]
fn every_ratio_over_every_shape_in_a_session() {
    let rt = runtime();
    let table: Vec<u32> = lcg(11, 5);
    for (input, output) in [((1, 1), (4, 1)), ((4, 1), (1, 1)), ((1, 1), (1, 5))] {
        let p = ratios_program(&rt, input, output);
        let s = p.session().expect("a session");
        let t = s.buffer_from(&table).unwrap();
        for (global, local) in shapes() {
            let items: u64 = global.iter().product::<usize>() as u64;
            let ipu = items_per_unit(&global, &local);
            let fits =
                |(a, b): (u64, u64)| (a * ipu).is_multiple_of(b) && (a * items).is_multiple_of(b);
            let inp = lcg(items as u32, (input.0 * items / input.1).max(1) as usize);
            let i = s.buffer_from(&inp).unwrap();
            let mut out = s.buffer::<u32>((output.0 * items / output.1).max(1) as usize).unwrap();
            let what = format!("{input:?}->{output:?} over {global:?}/{local:?}");
            for launch in 0..3 {
                let r = s
                    .launch("ratios")
                    .global(&global)
                    .local(&local)
                    .input(&i, Pattern::ratio(input.0, input.1).unwrap())
                    .output(&mut out, Pattern::ratio(output.0, output.1).unwrap())
                    .input(&t, Pattern::Whole)
                    .scalar(table.len() as u32)
                    .run();
                match (fits(input) && fits(output), r) {
                    (true, Ok(_)) => assert_eq!(
                        out.to_vec().unwrap(),
                        ratios_cpu(items, input, output, &inp, &table),
                        "{what}, launch {launch}"
                    ),
                    (false, Err(Error::BadArgument { .. })) => {}
                    (_, r) => panic!("{what}, launch {launch}: {r:?}"),
                }
            }
        }
    }
}

/// `groups` over 2-D and 3-D ranges (the API's global offset): the units' outputs are exact,
/// every other output element untouched, with a halo reaching rows outside the units.
#[test]
fn a_sub_range_of_units_of_odd_shapes_writes_exactly_its_outputs() {
    let rt = runtime();
    let p = rt
        .program_with_options(&KernelSource::from_text("halo.cl", HALO), "-D R=1UL")
        .expect("builds");
    let sentinel = 0xdead_beef;
    for (global, local, units) in [
        (vec![3, 5], vec![1, 1], 0..1),
        (vec![3, 5], vec![1, 1], 4..5),
        (vec![12, 10], vec![4, 5], 1..2),
        (vec![2, 3, 11], vec![1, 3, 1], 3..10),
        (vec![4, 2, 6], vec![2, 2, 3], 1..2),
    ] {
        let n: usize = global.iter().product();
        let row: usize = global[..global.len() - 1].iter().product();
        let per_unit = row * local[local.len() - 1];
        let inp = lcg(n as u32 + 9, n);
        let want = halo_cpu(&inp, row);
        for (name, balancer) in every_balancer() {
            let mut out = vec![sentinel; n];
            p.launch("halo")
                .global(&global)
                .local(&local)
                .input(&inp, Pattern::halo(1))
                .output(&mut out, Pattern::ONE_TO_ONE)
                .scalar(row as u64)
                .scalar(n as u64)
                .groups(units.clone())
                .balancer(balancer)
                .run()
                .unwrap_or_else(|e| panic!("{global:?} {units:?} with {name}: {e}"));
            let inside = units.start as usize * per_unit..units.end as usize * per_unit;
            for (i, (got, want)) in out.iter().zip(&want).enumerate() {
                let expect = if inside.contains(&i) { *want } else { sentinel };
                assert_eq!(*got, expect, "{global:?} {units:?} with {name}: element {i}");
            }
        }
    }
}

/// Work-groups of the largest size every device takes, in 1-D and spread over 2-D.
#[test]
fn work_groups_of_the_devices_largest_size_are_exact() {
    let rt = runtime();
    let p = ratios_program(&rt, (1, 1), (1, 1));
    let most = rt
        .devices()
        .iter()
        .map(|d| d.max_work_group_size.min(d.max_work_item_sizes[0]).min(d.max_work_item_sizes[1]))
        .min()
        .unwrap();
    let table = lcg(3, 3);
    for (global, local) in [
        (vec![3 * most], vec![most]),
        (vec![most / 2, 6], vec![most / 2, 2]),
        (vec![2, most], vec![2, most / 2]),
    ] {
        let items: usize = global.iter().product();
        let inp = lcg(5, items);
        for (name, balancer) in every_balancer() {
            let mut out = vec![0u32; items];
            p.launch("ratios")
                .global(&global)
                .local(&local)
                .input(&inp, Pattern::ONE_TO_ONE)
                .output(&mut out, Pattern::ONE_TO_ONE)
                .input(&table, Pattern::Whole)
                .scalar(table.len() as u32)
                .balancer(balancer)
                .run()
                .unwrap_or_else(|e| panic!("{global:?}/{local:?} with {name}: {e}"));
            assert_eq!(out, ratios_cpu(items as u64, (1, 1), (1, 1), &inp, &table), "{name}");
        }
    }
}
