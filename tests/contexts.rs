//! `HETDSL_CONTEXTS`: the devices of a platform share one OpenCL context (`platform`) or each
//! has its own (`device`, the default). Both give the CPU reference's results, one-shot and in
//! a session whose halo rows cross between the devices; a value that means nothing is an error.
//! A process of its own, since it sets the variable.

mod common;

use common::{close, expand4_reference, jacobi_cpu, jacobi_launch};
use hetdsl::balance::Static;
use hetdsl::{Error, KernelSource, Runtime};

fn one_shot_and_session_match_the_cpu(setting: &str) {
    let p = common::program("engine.cl");
    let input = common::lcg(7, 4096);
    let mut out = vec![0u32; 4 * input.len()];
    let launch = common::expand4(&p, input.len(), &input, &mut out);
    let r = launch.balancer(common::round_robin(4)).run().expect("expand4 runs");
    common::assert_coexecuted(&r);
    assert_eq!(out, expand4_reference(&input), "{setting}: expand4");

    let p = common::program("session.cl");
    let s = p.session().expect("a session");
    let (w, h) = (64usize, 96usize);
    let start = common::jacobi_start(w, h);
    let mut a = s.buffer_from(&start).unwrap();
    let mut b = s.buffer::<f32>(w * h).unwrap();
    let mut want = start.clone();
    for sweep in 0..6 {
        let (src, dst) = if sweep % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        // Halves, so that halo rows cross between the two devices' contexts at every sweep.
        let halves = Box::new(Static::with_weights(vec![1.0, 1.0]));
        let r = jacobi_launch(&s, src, dst, w, h).balancer(halves).run().expect("a sweep runs");
        if sweep >= 1 {
            assert!(r.moved_arg(0).total() > 0, "{setting}: sweep {sweep} moved no halo row");
        }
        want = jacobi_cpu(&want, w, h);
    }
    close(&a.to_vec().unwrap(), &want, &format!("{setting}: jacobi x6"));
}

#[test]
fn a_context_per_device_or_per_platform_gives_the_same_results() {
    for setting in ["platform", "device"] {
        std::env::set_var("HETDSL_CONTEXTS", setting);
        one_shot_and_session_match_the_cpu(setting);
    }
    std::env::remove_var("HETDSL_CONTEXTS");
    one_shot_and_session_match_the_cpu("unset");

    std::env::set_var("HETDSL_CONTEXTS", "sometimes");
    let rt = Runtime::new().expect("an OpenCL runtime");
    match rt.program(&KernelSource::from_text("k.cl", "__kernel void k() {}")) {
        Err(Error::BadConfig(m)) => {
            assert!(m.contains("HETDSL_CONTEXTS") && m.contains("sometimes"), "{m}")
        }
        other => panic!("expected BadConfig, got {:?}", other.map(|_| "a program")),
    }
}
