//! The macros validate balancer specs at compile time against their own copy of the runtime's
//! grammar (a proc-macro crate cannot depend on the runtime). This holds the copy and
//! `BalancerSpec` to the same names, and to the same verdicts on a set of specs.

#[allow(dead_code)]
#[path = "../../hetdsl-macros/src/balancer_names.rs"]
mod mirror;

use hetdsl::balance::{BalancerSpec, NAMES};

#[test]
fn the_macros_know_every_balancer_name_and_no_other() {
    let mirrored: Vec<&str> = mirror::BALANCERS.iter().map(|(name, _)| *name).collect();
    assert_eq!(mirrored, NAMES);
}

#[test]
fn the_macros_and_the_runtime_agree_on_specs() {
    let specs = [
        "sigmoid",
        "sigmoid:1",
        "sigmoid-faithful",
        "static",
        "static:1,3",
        "static-rev:2",
        "static:x",
        "dynamic",
        "dynamic:64",
        "dynamic:1,2",
        "dynamic:-1",
        "dynamic-chunk:16",
        "hguided",
        "hguided:k=2,m=1",
        "hguided:k=2,k=3",
        "hguided:q=1",
        "hguided:m=1.5",
        "hguided-tuned:k=3.5/1,m=1/30",
        "adaptive",
        "minmax",
        "linear2p",
        "linear2p:3",
        "nope",
    ];
    for spec in specs {
        let runtime = spec.parse::<BalancerSpec>().is_ok();
        let macros = mirror::validate(spec).is_ok();
        assert_eq!(macros, runtime, "`{spec}`: macros say {macros}, runtime says {runtime}");
    }
}
