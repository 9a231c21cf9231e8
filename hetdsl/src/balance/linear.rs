//! The two-point linear model (sparse-grid paper, §5.2): a device's execution time is approximated
//! by the line through two measurements, and the work is split where the lines say every device
//! ends together. That paper measures the GPU at N = 1 and at N = (maximum active threads) + 1 work
//! items: on a GPU whose time rises in steps of one full wave these are exactly one and two waves,
//! so the line carries the fixed cost (transfers, launch) and the per-wave throughput. Our probes
//! take those same two quantities directly: one and two occupancy bounds of work-groups (a full
//! wave and two), which avoids paying a whole wave for one work-group. The CPU is measured the same
//! way (the paper finds it linear from small sizes on).

use super::minmax::{split_by_models, two_point_fit};
use super::probe::{ProbeThenSplit, SplitRule, SplitView};

/// Probe sizes and the two-point split of [`LinearTwoPoint`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TwoPointRule;

impl SplitRule for TwoPointRule {
    fn name(&self) -> String {
        "linear2p".into()
    }

    fn probes(&self, min_groups: u64) -> Vec<u64> {
        vec![min_groups, min_groups.saturating_mul(2)]
    }

    fn split(&self, work: u64, view: &SplitView<'_>) -> Vec<u64> {
        split_by_models(work, view, two_point_fit)
    }
}

/// Two-point linear model: probe twice, split where the lines meet.
pub type LinearTwoPoint = ProbeThenSplit<TwoPointRule>;
