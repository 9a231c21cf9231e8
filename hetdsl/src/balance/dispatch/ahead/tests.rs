use crate::balance::dispatch::tests::{run, start};
use crate::balance::dispatch::Decision;
use crate::balance::Dynamic;

#[test]
fn a_queued_package_runs_from_its_predecessor_s_end_and_a_loss_re_runs_it() {
    let mut b = Dynamic::chunk(2);
    let mut d = start(&mut b, 2, 40, false);
    // Nothing is queued on an idle device, nor behind a device's first package: nothing of
    // it is measured yet.
    assert_eq!(d.ask_ahead(0, 0.0).unwrap(), None);
    let first = run(d.ask(0, 0.0).unwrap()).package;
    assert_eq!(d.ask_ahead(0, 0.0).unwrap(), None);
    // Device 1 runs one package 10 times slower than device 0: more than QUEUE_CLASS apart.
    let slow = run(d.ask(1, 0.0).unwrap()).package;
    d.kernel_done(0, first, 1.0, None).unwrap();
    d.merged(0, first, 1.0).unwrap();
    let second = run(d.ask(0, 1.0).unwrap()).package;
    let third = d.ask_ahead(0, 1.1).unwrap().expect("a package queued").package;
    assert_eq!(d.queued(0), Some(third));
    // One queued at a time.
    assert_eq!(d.ask_ahead(0, 1.2).unwrap(), None);
    d.kernel_done(1, slow, 10.0, None).unwrap();
    d.merged(1, slow, 10.0).unwrap();
    let _ = run(d.ask(1, 10.0).unwrap());
    assert_eq!(d.ask_ahead(1, 10.0).unwrap(), None, "a slow device holds nothing queued");
    // The queued one runs from the second one's end, not from when it was queued.
    d.kernel_done(0, second, 10.5, None).unwrap();
    assert_eq!(d.running(0), Some((third, 10.5)));
    assert_eq!(d.queued(0), None);
    let fourth = d.ask_ahead(0, 10.6).unwrap().expect("a package queued").package;
    let mut requeued = d.fail(0, 11.0, "gone".into()).unwrap();
    requeued.sort_by_key(|p| p.offset);
    // The kept output of `second` was not merged yet: it is re-run with the other two.
    assert_eq!(requeued, vec![second, third, fourth]);
    // While re-runs wait for an idle device, nothing is queued behind one.
    assert_eq!(d.ask_ahead(1, 11.0).unwrap(), None);
    let mut ran = Vec::new();
    let mut at = 11.0;
    loop {
        if let Some((p, _)) = d.running(1) {
            at += 1.0;
            d.kernel_done(1, p, at, None).unwrap();
            d.merged(1, p, at).unwrap();
            ran.push(p);
            continue;
        }
        match d.ask(1, at).unwrap() {
            Decision::Run(a) => assert!(d.running(1) == Some((a.package, at))),
            _ => break,
        }
    }
    assert!(d.is_over(), "ran {ran:?}");
}

#[test]
fn a_device_whose_packages_cost_mostly_transfers_gets_nothing_queued() {
    let mut b = Dynamic::chunk(2);
    let mut d = start(&mut b, 2, 40, false);
    // Device 0's kernel is 0.9 s of a 1 s span; device 1's 0.1 s of 1 s (its writes, read-back
    // and host copies take the rest).
    for (dev, kernel) in [(0, 0.9), (1, 0.1)] {
        let p = run(d.ask(dev, 0.0).unwrap()).package;
        d.kernel_done(dev, p, 1.0, Some(kernel)).unwrap();
        d.merged(dev, p, 1.0).unwrap();
        run(d.ask(dev, 1.0).unwrap());
    }
    assert!(d.ask_ahead(0, 1.0).unwrap().is_some(), "kernel-bound: queued");
    assert_eq!(d.ask_ahead(1, 1.0).unwrap(), None, "transfer-bound: nothing queued");
}
