//! The rules of a partition pattern `a:b` whose sides the macros know at compile time (literals)
//! or only at run time (a `const` or a scalar parameter of the kernel): one wording for both.

/// Why a side of `a:b` cannot be used, for a side written as `text` whose value is `value`; the
/// compile-time check says the same for a literal `0`.
pub fn side_error(text: &str, value: i128) -> Option<String> {
    if value <= 0 {
        let is = if text.parse::<i128>().is_ok() {
            String::new()
        } else {
            format!(" (`{text}` is {value})")
        };
        return Some(format!("both sides of a pattern `a:b` are positive{is}"));
    }
    if u64::try_from(value).is_err() {
        return Some(format!("`{text}` is {value}, more than a pattern side can hold (a `u64`)"));
    }
    None
}

/// Why `a:b` does not fit work-groups of `items_per_group` work-items (each package, a whole
/// number of work-groups, must own a whole number of elements), if it does not.
pub fn fit_error(a: u64, b: u64, items_per_group: u64) -> Option<String> {
    if b == 0 || (u128::from(a) * u128::from(items_per_group)) % u128::from(b) == 0 {
        return None;
    }
    Some(format!(
        "pattern {a}:{b} does not fit the work-group size {items_per_group}: a work-group would own \
         {a}·{items_per_group}/{b} elements; {a} × the work-group size must be a multiple of {b}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_are_positive_and_fit_a_u64() {
        assert_eq!(side_error("0", 0).unwrap(), "both sides of a pattern `a:b` are positive");
        assert_eq!(
            side_error("cols", -3).unwrap(),
            "both sides of a pattern `a:b` are positive (`cols` is -3)"
        );
        assert!(side_error("big", i128::from(u64::MAX) + 1).unwrap().contains("a `u64`"));
        assert_eq!(side_error("cols", 7), None);
    }

    #[test]
    fn a_pattern_fits_when_each_group_owns_whole_elements() {
        assert_eq!(fit_error(1, 64, 64), None);
        assert_eq!(fit_error(7, 1, 64), None);
        let e = fit_error(1, 255, 64).unwrap();
        assert!(e.starts_with("pattern 1:255 does not fit the work-group size 64"), "{e}");
    }
}
