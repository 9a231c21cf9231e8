//! Compile-time checks of `kernel!` and `#[coexec]`: declarations that must compile, and
//! mistakes that must be refused with the messages in the `.stderr` snapshots (rustc 1.95;
//! regenerate with `TRYBUILD=overwrite cargo test -p hetdsl --test ui`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
