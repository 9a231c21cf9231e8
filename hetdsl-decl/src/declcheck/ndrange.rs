//! The declared work-group size (`local`) against what the kernel asks of its NDRange: the
//! dimensions its work-item built-ins read, and the size its `reqd_work_group_size` requires.
//! Shared by the macros and the check of a source loaded at run time, so both say the same.

use crate::clsig::Kernel;

/// The problems of declaring `local` for kernel `k`; `at` names a 0-based line of the source.
pub fn ndrange_problems(k: &Kernel, local: &[u64], at: &dyn Fn(usize) -> String) -> Vec<String> {
    let mut problems = Vec::new();
    let dims = local.len() as u64;
    let declared = match local {
        [n] => format!("`local = {n}`"),
        _ => format!("`local = {local:?}`"),
    };
    if let Some(d) = k.dims.as_ref().filter(|d| d.dim >= dims) {
        let value =
            if d.builtin.ends_with("_id") || d.builtin == "get_global_offset" { "0" } else { "1" };
        // A kernel written for either shape still runs in the higher one, with a size of 1 there.
        let want = match (d.dim, local) {
            (1, [x]) => format!("`local = [X, Y]` for a 2-D NDRange (`[{x}, 1]` over one row)"),
            (1, _) => "`local = [X, Y]` for a 2-D NDRange".to_string(),
            (_, [x, y]) => {
                format!("`local = [X, Y, Z]` for a 3-D NDRange (`[{x}, {y}, 1]` over one plane)")
            }
            _ => "`local = [X, Y, Z]` for a 3-D NDRange".to_string(),
        };
        problems.push(format!(
            "kernel `{}` calls `{}({})` at {}, but {declared} declares a {dims}-D NDRange, in \
             which that call answers {value} for every work-item: a kernel written for more \
             dimensions computes the wrong elements. Declare {want}",
            k.name,
            d.builtin,
            d.dim,
            at(d.line)
        ));
    }
    if let Some(r) = &k.required_local {
        let padded = |s: &[u64]| -> Vec<u64> { (0..3).map(|i| *s.get(i).unwrap_or(&1)).collect() };
        if padded(&r.sizes) != padded(local) {
            problems.push(format!(
                "kernel `{}` requires work-groups of {:?} (its `reqd_work_group_size` at {}), but \
                 {declared} declares {:?}: every launch would be refused. Declare the size the \
                 kernel requires",
                k.name,
                r.sizes,
                at(r.line),
                padded(local)
            ));
        }
    }
    problems
}
