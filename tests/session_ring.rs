//! A session's large moves stream through a pinned ring per device, a slot at a time: inputs
//! from the host image, inputs from another device, outputs home. Here both PoCL devices get
//! rings (`HETDSL_STAGE_AT_BUILD=all`; by default only GPUs, which CI has none of) of 1 MiB
//! slots, so each move of a few MiB goes in several pieces. Checked against the CPU, and each
//! kind of move seen to go through the ring in pieces. One process of its own: it sets the
//! variables before any device is used.

mod common;

use common::close;
use common::events::{events_of, Event};
use hetdsl::balance::Static;
use hetdsl::{Buffer, Report, Session};

const N: usize = 1 << 20;
const SLOT: usize = 1 << 20;

/// `out = 2 x + y`, the whole range split by `weights` between the two devices.
fn saxpy(
    s: &Session,
    x: &Buffer<f32>,
    y: &Buffer<f32>,
    out: &mut Buffer<f32>,
    weights: [f64; 2],
) -> Report {
    common::saxpy_launch(s, N, x, y, out)
        .balancer(Box::new(Static::with_weights(weights.to_vec())))
        .run()
        .expect("saxpy runs")
}

/// The ring moves among `events` in `direction`: (bytes, pieces) each.
fn ring_moves(events: &[Event], direction: &str) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter(|e| e.message == "session move through ring")
        .filter(|e| e.fields.get("direction").map(String::as_str) == Some(direction))
        .map(|e| (e.number("bytes"), e.number("pieces")))
        .collect()
}

#[test]
fn large_moves_stream_through_each_device_s_ring_in_pieces() {
    std::env::set_var("HETDSL_STAGE_AT_BUILD", "all");
    std::env::set_var("HETDSL_STAGING_SLOT_MIB", "1");
    let p = common::program("session.cl");
    let s = p.session_on(&[0, 1]).expect("a session");
    // No two pieces alike, so a piece landing in the wrong place changes the result.
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.25).collect();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 2.0 * x + y).collect();
    let x = s.buffer_from(&xs).unwrap();
    let y = s.buffer_from(&ys).unwrap();
    let mut out = s.buffer::<f32>(N).unwrap();

    // First launch: device 0 gets three quarters of each input from the host (3 MiB, three
    // slots), device 1 a quarter (one slot), besides the one-group warm-ups.
    let mut first = None;
    let events = events_of(|| first = Some(saxpy(&s, &x, &y, &mut out, [3.0, 1.0])));
    let first = first.expect("ran");
    let from_host = ring_moves(&events, "from host");
    let bytes: u64 = from_host.iter().map(|m| m.0).sum();
    assert_eq!(bytes, first.moved_arg(0).host_to_device + first.moved_arg(1).host_to_device);
    // Less the group that device 0's warm-up brought from the range's far end.
    let three_slots = 3 * SLOT as u64 - 64 * 4;
    assert_eq!(from_host.iter().filter(|&&m| m == (three_slots, 3)).count(), 2, "{from_host:?}");
    assert!(from_host.iter().all(|&(b, p)| p == b.div_ceil(SLOT as u64)), "{from_host:?}");

    // Second launch, the split turned round, reading the first's output: device 1 now needs
    // the middle half of it, fresh on device 0 only (2 MiB, two slots), read from there
    // through device 1's ring.
    let mut out2 = s.buffer::<f32>(N).unwrap();
    let mut second = None;
    let events = events_of(|| second = Some(saxpy(&s, &out, &y, &mut out2, [1.0, 3.0])));
    let second = second.expect("ran");
    let half = (N / 2 * 4) as u64;
    assert_eq!(second.moved_arg(0).device_to_device, half, "{}", second.table());
    assert_eq!(ring_moves(&events, "from device"), [(half, 2)], "two pieces");

    // The outputs home: a quarter from device 0 (one slot), three quarters from device 1.
    let mut got = Vec::new();
    let events = events_of(|| got = out2.to_vec().expect("read back"));
    let want2: Vec<f32> = want.iter().zip(&ys).map(|(o, y)| 2.0 * o + y).collect();
    close(&got, &want2, "saxpy of saxpy");
    let mut to_host = ring_moves(&events, "to host");
    to_host.sort_unstable();
    let quarter = (N / 4 * 4) as u64;
    assert_eq!(to_host, [(quarter, 1), (3 * quarter, 3)], "each device's part, slot by slot");
    // Into memory the caller keeps: a range of the first output across the devices' blocks,
    // stale on the host until now, then the rest of it and the whole second output.
    let mut kept = vec![f32::NAN; N];
    let mut moved = hetdsl::report::Moved::default();
    out.read_into(N / 8, &mut kept[..N / 2]).unwrap();
    close(&kept[..N / 2], &want[N / 8..N / 8 + N / 2], "a range read into kept memory");
    close(&out.read_counted(0..N, &mut moved).unwrap(), &want, "saxpy");
    assert_eq!(moved.device_to_host, (N / 2 * 4) as u64, "only what the range left stale");
    out2.read_into(0, &mut kept).unwrap();
    close(&kept, &want2, "read into kept memory");

    // The inputs' host images were never stale: nothing to bring home; the ring moved them
    // in without changing them.
    close(&x.to_vec().unwrap(), &xs, "x");
    close(&y.to_vec().unwrap(), &ys, "y");
}
