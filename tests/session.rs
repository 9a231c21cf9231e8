//! Sessions: buffers that stay on the devices across launches. Each test checks the results
//! against a plain CPU loop, and the data movement through the report's counters.

mod common;

use hetdsl::{Buffer, Error, Fault, Pattern, Session};

fn session() -> (hetdsl::Program, Session) {
    let p = common::program("session.cl");
    let s = p.session().expect("a session");
    (p, s)
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{what}: element {i}: {x} != {y}");
    }
}

const N: usize = 1 << 14;

fn saxpy(s: &Session, x: &Buffer<f32>, y: &Buffer<f32>, out: &mut Buffer<f32>) -> hetdsl::Report {
    s.launch("saxpy")
        .global(&[N])
        .local(&[64])
        .input(x, Pattern::ONE_TO_ONE)
        .input(y, Pattern::ONE_TO_ONE)
        .output(out, Pattern::ONE_TO_ONE)
        .scalar(2.0f32)
        .run()
        .expect("saxpy runs")
}

#[test]
fn a_second_identical_launch_moves_no_input_and_a_read_moves_exactly_the_stale_bytes() {
    let (_p, s) = session();
    let xs: Vec<f32> = (0..N).map(|i| (i % 100) as f32).collect();
    let ys: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let x = s.buffer_from(&xs).unwrap();
    let y = s.buffer_from(&ys).unwrap();
    let mut out = s.buffer::<f32>(N).unwrap();
    let first = saxpy(&s, &x, &y, &mut out);
    // Every input element went to some device at least once, from the host.
    let bytes = (N * 4) as u64;
    assert!(first.moved_arg(0).host_to_device >= bytes, "{:?}", first.moved_arg(0));
    assert_eq!(first.moved_arg(2).total(), 0, "an output moves nothing in");
    let second = saxpy(&s, &x, &y, &mut out);
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.0 * x + y).collect();
    let mut moved = hetdsl::report::Moved::default();
    let got = out.read_counted(0..N, &mut moved).unwrap();
    close(&got, &want, "saxpy");
    assert_eq!(moved.device_to_host, bytes, "the whole output was on the devices");
    // Read again: nothing is stale on the host any more.
    let mut again = hetdsl::report::Moved::default();
    out.read_counted(0..N, &mut again).unwrap();
    assert_eq!(again.total(), 0);
    println!("second launch moved {:?}", second.moved());
}
