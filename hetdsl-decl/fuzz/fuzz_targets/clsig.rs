//! Fuzzes the OpenCL C declaration reader that `kernel!` runs on user sources at compile time:
//! any input must give `Ok` or an error, never a panic (a panic in a proc macro is an
//! unreadable compile error) nor a hang, and what it returns must be self-consistent. The
//! preprocessor runs too, with `-D` defines read from the input's first line.
//!
//! Run: `cd hetdsl-decl/fuzz && cargo +nightly fuzz run clsig corpus/clsig`. The corpus is
//! also replayed on stable by the test `clsig::tests::fuzz_corpus_reads_consistently`.

#![no_main]

use libfuzzer_sys::fuzz_target;

use hetdsl_decl::clsig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(source) = clsig::parse(text) {
        if let Err(why) = source.self_check(text) {
            panic!("inconsistent result: {why}");
        }
    }
    // The same text read with build options taken from its first line, so the preprocessor's
    // conditionals are explored with defines too.
    let options = text.lines().next().unwrap_or_default();
    if let Ok(defines) = clsig::defines_from_options(options) {
        if let Ok(source) = clsig::parse_with_defines(text, &defines) {
            if let Err(why) = source.self_check(text) {
                panic!("inconsistent result with {options:?}: {why}");
            }
        }
    }
});
