//! Settings read from the environment: a value that means nothing is an error naming the
//! variable, not silently the default. A process of its own, since it sets variables.

mod common;

use common::program;
use hetdsl::{Error, WaitMode};

/// The tests set variables every thread of this process reads: one at a time.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _one = ENV.lock().unwrap_or_else(|e| e.into_inner());
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

#[test]
fn unreadable_measurement_knobs_are_errors_at_the_build() {
    let _one = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let bad = [
        ("HETDSL_COPY_THREADS", "abc"),
        ("HETDSL_COPY_THREADS", "0"),
        ("HETDSL_COPY_THREADS", ""),
        ("HETDSL_STAGING_SLOT_MIB", "-1"),
        ("HETDSL_STAGING_SLOT_MIB", "5000"),
    ];
    for (name, value) in bad {
        std::env::set_var(name, value);
        let runtime = hetdsl::Runtime::new().unwrap();
        let source = hetdsl::KernelSource::from_text("k.cl", "__kernel void k(__global int* x) {}");
        match runtime.program(&source) {
            Err(Error::BadConfig(m)) => assert!(m.contains(name) && m.contains(value), "{m}"),
            Err(e) => panic!("{name}={value}: expected BadConfig, got {e}"),
            Ok(_) => panic!("{name}={value}: built"),
        }
        std::env::remove_var(name);
    }
    std::env::set_var("HETDSL_COPY_THREADS", "3");
    let p = program("engine.cl");
    run(&p, false).unwrap();
    std::env::remove_var("HETDSL_COPY_THREADS");
}
