//! Settings read from the environment: a value that means nothing is an error naming the
//! variable, not silently the default. A process of its own, since it sets variables.

mod common;

use common::program;
use hetdsl::{Error, WaitMode};

fn run(p: &hetdsl::Program, explicit: bool) -> hetdsl::Result<hetdsl::Report> {
    let input = vec![3u32; 256];
    let mut out = vec![0u32; 1024];
    let mut l = common::expand4(p, 256, &input, &mut out);
    if explicit {
        l = l.wait(WaitMode::Block).backups(false).pipeline(true);
    }
    let r = l.run();
    if r.is_ok() {
        assert_eq!(out[..4], [3, 6, 9, 3 ^ 0x5a5a5a5a]);
    }
    r
}

#[test]
fn unreadable_wait_and_backup_settings_are_errors() {
    let p = program("engine.cl");
    let settings =
        [("HETDSL_WAIT", "sometimes"), ("HETDSL_BACKUPS", "maybe"), ("HETDSL_PIPELINE", "on")];
    for (name, value) in settings {
        std::env::set_var(name, value);
        match run(&p, false) {
            Err(Error::BadConfig(m)) => {
                assert!(m.contains(name) && m.contains(value), "{m}");
            }
            other => panic!("{name}={value}: expected BadConfig, got {other:?}"),
        }
        // A launch that sets the same thing itself does not read the variable.
        run(&p, true).unwrap_or_else(|e| panic!("{name}={value} with explicit settings: {e}"));
        std::env::remove_var(name);
    }
    run(&p, false).unwrap();
}
