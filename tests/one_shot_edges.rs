//! One-shot launches at the engine's edges, each output checked against a plain CPU loop:
//! several threads launching one program at once over sub-ranges and device sets, reduced
//! outputs over sub-ranges with every balancer, and a range of 2^33 work-items whose last
//! work-groups alone run (global offsets past 32 bits).

mod common;

use common::{every_balancer, lcg};
use hetdsl::{KernelSource, Merge, Pattern, Program};

const SRC: &str = r#"
__kernel void hist(__global const uint* in, __global uint* bins) {
    atomic_add(&bins[in[get_global_id(0)] % 16u], 1u);
}
__kernel void tag(__global ulong* out) {
    if (get_local_id(0) == 0) {
        out[get_group_id(0)] = ((ulong)get_global_id(0) << 8) ^ (ulong)get_num_groups(0)
            ^ ((ulong)get_global_size(0) << 1);
    }
}
"#;

fn program() -> Program {
    common::two_devices().program(&KernelSource::from_text("edges.cl", SRC)).expect("builds")
}

#[test]
fn threads_launching_one_program_at_once_each_get_their_own_outputs() {
    let p = std::sync::Arc::new(common::program("engine.cl"));
    let threads: Vec<_> = (0..4usize)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                for k in 0..6usize {
                    let n = 64 * (64 + 16 * ((t + k) % 5));
                    let input = lcg((t * 10 + k) as u32, n);
                    let mut out = vec![7u32; 4 * n];
                    let units = (n / 64) as u64;
                    let range = (k as u64 % 3)..units - (t as u64 % 4);
                    let devices: &[usize] = match (t + k) % 3 {
                        0 => &[0, 1],
                        1 => &[1],
                        _ => &[1, 0],
                    };
                    common::expand4(&p, n, &input, &mut out)
                        .groups(range.clone())
                        .on_devices(devices)
                        .run()
                        .unwrap();
                    let want = common::expand4_reference(&input);
                    for i in 0..n {
                        let inside = range.contains(&((i / 64) as u64));
                        let w = if inside { &want[4 * i..4 * i + 4] } else { &[7u32; 4][..] };
                        assert_eq!(&out[4 * i..4 * i + 4], w, "thread {t}, launch {k}, item {i}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn a_sum_over_sub_ranges_counts_only_their_work_groups_with_every_balancer() {
    let p = program();
    let n = 64 * 200;
    let input = lcg(6, n);
    for range in [0..200u64, 199..200, 0..1, 1..199, 66..200] {
        for (name, balancer) in every_balancer() {
            let mut bins = vec![1u32; 16];
            p.launch("hist")
                .global(&[n])
                .local(&[64])
                .input(&input, Pattern::ONE_TO_ONE)
                .reduce(&mut bins, Merge::Sum)
                .groups(range.clone())
                .balancer(balancer)
                .run()
                .unwrap();
            let mut want = vec![1u32; 16];
            for v in &input[range.start as usize * 64..range.end as usize * 64] {
                want[(v % 16) as usize] += 1;
            }
            assert_eq!(bins, want, "{range:?} {name}");
        }
    }
}

#[test]
fn the_last_work_groups_of_a_range_past_32_bits_see_their_own_ids() {
    let p = program();
    let (global, local) = (1usize << 33, 1024usize);
    let groups = global / local;
    let mut out = vec![0u64; groups];
    let range = (groups as u64 - 40)..groups as u64;
    p.launch("tag")
        .global(&[global])
        .local(&[local])
        .output(&mut out, Pattern::ratio(1, 1024).unwrap())
        .groups(range.clone())
        .run()
        .unwrap();
    for (g, &got) in out.iter().enumerate() {
        let want = match range.contains(&(g as u64)) {
            true => ((g * local) as u64) << 8 ^ groups as u64 ^ ((global as u64) << 1),
            false => 0,
        };
        assert_eq!(got, want, "work-group {g}");
    }
}
