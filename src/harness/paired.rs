//! Calls of one kernel that alternate between variants, round by round: the fastest device
//! alone (in one package, and under the default balancer) and the default balancer on a set of
//! devices. On a machine whose speed drifts from minute to minute (a memory-bound kernel's host
//! copies on a shared host), medians taken one variant after the other compare different
//! minutes; alternated, every variant's median covers the same stretch of time.

use hetdsl::Balancer;

use crate::samples::Sample;

/// Makes a fresh balancer for each call, `None` for the launch's default.
pub type MakeBalancer<'a> = &'a dyn Fn() -> Result<Option<Box<dyn Balancer>>, String>;

/// One variant: the devices it runs on and its balancer.
pub struct Variant<'a> {
    pub devices: &'a [usize],
    pub balancer: MakeBalancer<'a>,
}

/// One variant's calls, in round order.
#[derive(Debug, Default, Clone)]
pub struct Calls {
    pub roi: Vec<f64>,
    pub run: Vec<f64>,
    /// The balancer each call's report names (for a default launch: the form it ran in).
    pub balancers: Vec<String>,
}

impl Calls {
    pub fn median_roi(&self) -> f64 {
        median(&self.roi)
    }
    pub fn median_run(&self) -> f64 {
        median(&self.run)
    }
}

/// `rounds` rounds, each calling every variant once in order, every call checked against the
/// CPU reference: an error at the first call that fails or gives a wrong output.
pub fn alternate(
    sample: &mut dyn Sample,
    variants: &[Variant],
    rounds: usize,
) -> Result<Vec<Calls>, String> {
    let mut calls = vec![Calls::default(); variants.len()];
    for _ in 0..rounds.max(1) {
        for (v, c) in variants.iter().zip(calls.iter_mut()) {
            let report =
                sample.run(Some(v.devices), (v.balancer)()?, None).map_err(|e| e.to_string())?;
            let verdict = sample.verify();
            if !verdict.correct {
                return Err(format!(
                    "devices {:?}, {}: wrong output: {verdict}",
                    v.devices, report.balancer
                ));
            }
            c.roi.push(report.roi_seconds);
            c.run.push(report.binary_seconds);
            c.balancers.push(report.balancer.clone());
        }
    }
    Ok(calls)
}

/// The median (the upper one of an even count); NaN for none.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_call() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0]), 4.0);
        assert!(median(&[]).is_nan());
    }
}
