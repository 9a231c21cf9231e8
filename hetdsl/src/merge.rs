//! Outputs merged by reduction: a histogram built with atomics, a "changed" flag any work-item
//! may set, a maximum — outputs that no `a:b` pattern describes, because every work-group may
//! write anywhere in them.
//!
//! Such a buffer is whole on every device: each device computes into its own copy, set to the
//! identity for a sum and to the caller's values for max, min, or and and (which fold a value
//! with itself into itself, so a kernel may read what it lowers or raises), and the engine folds
//! each package's contribution into the caller's buffer with the merge, so that the caller ends
//! with `initial ⊕ (every package's contribution)`.
//! A package's contribution is folded exactly once (see [`crate::Launch::reduce`]).

use std::fmt;
use std::str::FromStr;

use crate::pod::{bytes_of, Pod};

/// How the copies of a reduced output combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Element-wise sum (integers wrap, as OpenCL's atomics do).
    Sum,
    /// Element-wise maximum.
    Max,
    /// Element-wise minimum.
    Min,
    /// Bitwise or (integers only): a flag any work-item may set.
    Or,
    /// Bitwise and (integers only): a flag any work-item may clear.
    And,
}

impl Merge {
    /// Its name as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Merge::Sum => "sum",
            Merge::Max => "max",
            Merge::Min => "min",
            Merge::Or => "or",
            Merge::And => "and",
        }
    }
}

impl fmt::Display for Merge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Merge {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sum" => Ok(Merge::Sum),
            "max" => Ok(Merge::Max),
            "min" => Ok(Merge::Min),
            "or" => Ok(Merge::Or),
            "and" => Ok(Merge::And),
            _ => Err(format!("unknown merge `{s}`: expected sum, max, min, or or and")),
        }
    }
}

/// An element type a reduced output may hold.
pub trait Reducible: Pod {
    /// Whether `merge` applies to this type (`Or` and `And` apply to integers only).
    fn supports(merge: Merge) -> bool;
    /// The value that leaves any other unchanged under `merge` (for an unsupported merge, zero;
    /// the engine refuses such a launch before using it).
    fn identity(merge: Merge) -> Self;
    /// `a ⊕ b` under `merge` (for an unsupported merge, `a`).
    fn combine(a: Self, b: Self, merge: Merge) -> Self;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(_: Merge) -> bool {
                true
            }
            fn identity(merge: Merge) -> Self {
                match merge {
                    Merge::Sum | Merge::Or => 0,
                    Merge::Max => <$t>::MIN,
                    Merge::Min => <$t>::MAX,
                    Merge::And => !0,
                }
            }
            fn combine(a: Self, b: Self, merge: Merge) -> Self {
                match merge {
                    Merge::Sum => a.wrapping_add(b),
                    Merge::Max => a.max(b),
                    Merge::Min => a.min(b),
                    Merge::Or => a | b,
                    Merge::And => a & b,
                }
            }
        }
    )*};
}
integer!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(merge: Merge) -> bool {
                matches!(merge, Merge::Sum | Merge::Max | Merge::Min)
            }
            fn identity(merge: Merge) -> Self {
                match merge {
                    // -0.0, not 0.0: the one value whose sum with any x is x bit for bit
                    // (0.0 + -0.0 is 0.0), so an element only one device writes merges exactly.
                    Merge::Sum => -0.0,
                    Merge::Max => <$t>::NEG_INFINITY,
                    Merge::Min => <$t>::INFINITY,
                    Merge::Or | Merge::And => 0.0,
                }
            }
            fn combine(a: Self, b: Self, merge: Merge) -> Self {
                // The identity leaves `a` as it is, NaN included: `max` alone would turn an
                // element no work-item wrote, NaN in the caller's buffer, into -inf.
                match merge {
                    Merge::Sum => a + b,
                    Merge::Max if b == Self::identity(merge) => a,
                    Merge::Min if b == Self::identity(merge) => a,
                    Merge::Max => a.max(b),
                    Merge::Min => a.min(b),
                    Merge::Or | Merge::And => a,
                }
            }
        }
    )*};
}
float!(f32, f64);

/// A reduced output's element type, erased: what the engine needs to set a device's copy to the
/// identity and fold a copy into the caller's buffer byte for byte.
#[derive(Clone, Copy)]
pub struct ReduceOps {
    pub(crate) type_name: &'static str,
    pub(crate) supported: fn(Merge) -> bool,
    pub(crate) identity: fn(Merge, usize) -> Vec<u8>,
    pub(crate) combine: fn(Merge, &mut [u8], &[u8]),
}

impl fmt::Debug for ReduceOps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.type_name)
    }
}

impl ReduceOps {
    /// The operations of `T`.
    pub(crate) fn of<T: Reducible>() -> ReduceOps {
        ReduceOps {
            type_name: std::any::type_name::<T>(),
            supported: T::supports,
            identity: identity_bytes::<T>,
            combine: combine_bytes::<T>,
        }
    }
}

/// `elems` identity values of `T`, as bytes.
fn identity_bytes<T: Reducible>(merge: Merge, elems: usize) -> Vec<u8> {
    let v = vec![T::identity(merge); elems];
    bytes_of(&v).to_vec()
}

/// `acc[i] = acc[i] ⊕ other[i]` over two byte images of `[T]` of the same length.
fn combine_bytes<T: Reducible>(merge: Merge, acc: &mut [u8], other: &[u8]) {
    let size = size_of::<T>();
    for (a, b) in acc.chunks_exact_mut(size).zip(other.chunks_exact(size)) {
        // SAFETY: each chunk holds exactly `size_of::<T>()` bytes and `T` is `Pod`, so any bytes
        // are a valid `T`; unaligned reads and writes need no alignment of the byte slices.
        unsafe {
            let x = std::ptr::read_unaligned(a.as_ptr().cast::<T>());
            let y = std::ptr::read_unaligned(b.as_ptr().cast::<T>());
            std::ptr::write_unaligned(a.as_mut_ptr().cast::<T>(), T::combine(x, y, merge));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for m in [Merge::Sum, Merge::Max, Merge::Min, Merge::Or, Merge::And] {
            assert_eq!(m.name().parse::<Merge>(), Ok(m));
        }
        assert!("product".parse::<Merge>().unwrap_err().contains("sum"));
    }

    #[test]
    fn identities_leave_values_unchanged() {
        fn check<T: Reducible + PartialEq + std::fmt::Debug>(values: &[T]) {
            for m in [Merge::Sum, Merge::Max, Merge::Min, Merge::Or, Merge::And] {
                if !T::supports(m) {
                    continue;
                }
                for &v in values {
                    assert_eq!(T::combine(v, T::identity(m), m), v, "{m}");
                    assert_eq!(T::combine(T::identity(m), v, m), v, "{m}");
                }
            }
        }
        check(&[0u8, 1, 200, 255]);
        check(&[i32::MIN, -5, 0, 7, i32::MAX]);
        check(&[u64::MAX, 3]);
        check(&[-1.5f32, 0.0, 3.25]);
        check(&[f64::MIN, 2.0]);
        assert!(!f32::supports(Merge::Or) && !f64::supports(Merge::And));
        assert!(i8::supports(Merge::Or));
    }

    #[test]
    fn a_nan_no_device_wrote_stays_nan() {
        // The caller's element is NaN and every device's copy holds the identity.
        for m in [Merge::Sum, Merge::Max, Merge::Min] {
            assert!(f32::combine(f32::NAN, f32::identity(m), m).is_nan(), "{m}");
            assert!(f64::combine(f64::NAN, f64::identity(m), m).is_nan(), "{m}");
        }
        // A value a device wrote still merges as `max` and `min` do.
        assert_eq!(f32::combine(f32::NAN, 2.0, Merge::Max), 2.0);
        assert_eq!(f64::combine(1.0, -3.0, Merge::Min), -3.0);
    }

    #[test]
    fn a_float_sum_with_the_identity_keeps_every_bit() {
        for v in [-0.0f32, 0.0, 1.5, -3.0, f32::MIN_POSITIVE / 2.0, f32::INFINITY] {
            let merged = f32::combine(f32::identity(Merge::Sum), v, Merge::Sum);
            assert_eq!(merged.to_bits(), v.to_bits(), "{v:?}");
        }
    }

    #[test]
    fn byte_images_combine_element_wise() {
        let ops = ReduceOps::of::<i16>();
        let a: Vec<i16> = vec![1, -4, 300];
        let b: Vec<i16> = vec![7, 9, -301];
        let mut acc = bytes_of(&a).to_vec();
        (ops.combine)(Merge::Max, &mut acc, bytes_of(&b));
        let back: Vec<i16> =
            acc.chunks_exact(2).map(|c| i16::from_ne_bytes([c[0], c[1]])).collect();
        assert_eq!(back, vec![7, 9, 300]);
        let id = (ops.identity)(Merge::Min, 2);
        assert_eq!(id, [i16::MAX.to_ne_bytes(), i16::MAX.to_ne_bytes()].concat());
    }
}
