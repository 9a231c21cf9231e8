//! Arguments given by address (`Arg::Region`): a launch over a sub-range of work-groups reads
//! and writes only its own elements, while another thread writes the rest of the same output
//! buffer; checked against a plain CPU loop.

mod common;

use common::{assert_coexecuted_once, expand4_reference, lcg, program, round_robin};
use hetdsl::engine::HostRegion;
use hetdsl::{Arg, Direction, Error, Pattern};

#[test]
fn a_launch_writes_its_groups_of_a_region_while_another_thread_writes_the_rest() {
    let p = program("engine.cl");
    let (n, lws, split) = (1usize << 15, 64usize, 200usize);
    let input = lcg(11, n);
    let mut out = vec![0u32; 4 * n];
    let (in_len, out_len) = (4 * n, 16 * n);
    let at = split * lws * 4; // the first element of the other thread's part
    let in_ptr = input.as_ptr() as *mut u8;
    let out_ptr = out.as_mut_ptr() as *mut u8;
    // SAFETY: both buffers outlive the scope; the launch reads the input and writes the
    // output of work-groups 0..split (elements 0..at), the other thread only elements at.. .
    let (inp, outp) =
        unsafe { (HostRegion::new(in_ptr, in_len), HostRegion::new(out_ptr, out_len)) };
    let rest = SendPtr(out_ptr as *mut u32);
    let report = std::thread::scope(|s| {
        let writer = s.spawn(move || {
            let rest = rest;
            for round in 0..50u32 {
                for i in at..4 * n {
                    // SAFETY: element `i` is past the launch's part, inside the buffer.
                    unsafe { rest.0.add(i).write_volatile(round ^ i as u32) };
                }
            }
        });
        let report = p
            .launch("expand4")
            .global(&[n])
            .local(&[lws])
            .arg(Arg::Region {
                region: inp,
                elem: 4,
                pattern: Pattern::ONE_TO_ONE,
                dir: Direction::In,
            })
            .arg(Arg::Region {
                region: outp,
                elem: 4,
                pattern: Pattern::ratio(4, 1).unwrap(),
                dir: Direction::Out,
            })
            .groups(0..split as u64)
            .balancer(round_robin(3))
            .run();
        writer.join().unwrap();
        report
    });
    let report = report.unwrap();
    assert_eq!((report.first_group, report.total_groups), (0, split as u64));
    assert_coexecuted_once(&report);
    let want = expand4_reference(&input);
    assert_eq!(&out[..at], &want[..at], "the launch's groups");
    assert!((at..4 * n).all(|i| out[i] == 49 ^ i as u32), "the other thread's part");
}

#[test]
fn a_region_argument_is_refused_by_verify_not_run() {
    let p = program("engine.cl");
    let n = 1 << 12;
    let input = lcg(12, n);
    let mut out = vec![7u32; 4 * n];
    let len = out.len() * 4;
    // SAFETY: `out` outlives the launch and nothing else touches it meanwhile.
    let region = unsafe { HostRegion::new(out.as_mut_ptr() as *mut u8, len) };
    let e = p
        .launch("expand4")
        .global(&[n])
        .local(&[64])
        .input(&input, Pattern::ONE_TO_ONE)
        .arg(Arg::Region {
            region,
            elem: 4,
            pattern: Pattern::ratio(4, 1).unwrap(),
            dir: Direction::Out,
        })
        .verify()
        .unwrap_err();
    assert!(matches!(&e, Error::BadConfig(m) if m.contains("Arg::Region")), "{e}");
    assert!(out.iter().all(|&v| v == 7), "nothing ran");
}

/// Windows (`HostRegion::window`): staging that holds only the bytes a launch over groups
/// `a..b` touches, input and output, gives the same outputs as the whole buffers.
#[test]
fn windows_of_the_touched_bytes_are_enough() {
    let p = program("engine.cl");
    let (n, lws) = (1usize << 14, 64usize);
    let (a, b) = (37usize, 201usize); // work-groups
    let input = lcg(13, n);
    let want = expand4_reference(&input);
    // The input's elements of groups a..b (1:1), the output's (4:1), nothing else.
    let mut inside: Vec<u32> = input[a * lws..b * lws].to_vec();
    let mut out = vec![0u32; 4 * (b - a) * lws];
    let (in_origin, out_origin) = (a * lws * 4, 4 * a * lws * 4);
    // SAFETY: both vectors outlive the launch, which alone touches them meanwhile.
    let (inp, outp) = unsafe {
        (
            HostRegion::window(inside.as_mut_ptr() as *mut u8, inside.len() * 4, in_origin, n * 4),
            HostRegion::window(out.as_mut_ptr() as *mut u8, out.len() * 4, out_origin, 16 * n),
        )
    };
    let report = p
        .launch("expand4")
        .global(&[n])
        .local(&[lws])
        .arg(Arg::Region { region: inp, elem: 4, pattern: Pattern::ONE_TO_ONE, dir: Direction::In })
        .arg(Arg::Region {
            region: outp,
            elem: 4,
            pattern: Pattern::ratio(4, 1).unwrap(),
            dir: Direction::Out,
        })
        .groups(a as u64..b as u64)
        .balancer(round_robin(5))
        .run()
        .unwrap();
    assert_coexecuted_once(&report);
    assert_eq!(out, want[4 * a * lws..4 * b * lws]);
}

/// A window that misses bytes the launch's groups touch, or a `whole` input given in part, is
/// the caller's error, named, and nothing runs.
#[test]
fn a_window_short_of_the_launch_is_refused() {
    let p = program("engine.cl");
    let (n, lws) = (1usize << 12, 64usize);
    let mut inside = vec![1u32; 10 * lws];
    let mut out = vec![7u32; 4 * n];
    let out_len = out.len() * 4;
    // SAFETY: the vectors outlive the launches, which alone touch them.
    let (short, outp) = unsafe {
        (
            HostRegion::window(inside.as_mut_ptr() as *mut u8, inside.len() * 4, 0, n * 4),
            HostRegion::new(out.as_mut_ptr() as *mut u8, out_len),
        )
    };
    let launch = |input: Arg<'static>, groups: std::ops::Range<u64>| {
        p.launch("expand4")
            .global(&[n])
            .local(&[lws])
            .arg(input)
            .arg(Arg::Region {
                region: outp,
                elem: 4,
                pattern: Pattern::ratio(4, 1).unwrap(),
                dir: Direction::Out,
            })
            .groups(groups)
            .run()
    };
    let sliced =
        Arg::Region { region: short, elem: 4, pattern: Pattern::ONE_TO_ONE, dir: Direction::In };
    let e = launch(sliced, 0..11).unwrap_err();
    assert!(
        matches!(&e, Error::BadArgument { index: 0, reason } if reason.contains("window")),
        "{e}"
    );
    let whole = Arg::Region { region: short, elem: 4, pattern: Pattern::Whole, dir: Direction::In };
    let e = launch(whole, 0..2).unwrap_err();
    assert!(matches!(&e, Error::BadArgument { index: 0, .. }), "{e}");
    assert!(out.iter().all(|&v| v == 7), "nothing ran");
    // Groups 0..10 are all the window holds: that runs.
    let sliced =
        Arg::Region { region: short, elem: 4, pattern: Pattern::ONE_TO_ONE, dir: Direction::In };
    launch(sliced, 0..10).unwrap();
    assert!(out[..4 * 10 * lws].chunks(4).all(|c| c == [1, 2, 1, 1 ^ 0x5a5a_5a5a]));
}

/// A raw pointer moved into the writer thread (the test vouches for its use).
#[derive(Clone, Copy)]
struct SendPtr(*mut u32);
// SAFETY: the writer touches only elements the launch leaves alone.
unsafe impl Send for SendPtr {}
