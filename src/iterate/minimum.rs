//! The fewest bytes a sequence of session launches must move into the devices, given the
//! partitions the balancer chose: each device keeps, per buffer, the element ranges it holds
//! fresh; a package needs its reach of each buffer it reads (its slice, the whole buffer, or its
//! rows and a halo), and whatever of that its device does not hold fresh must arrive from
//! elsewhere; what a package writes becomes fresh on its device alone. The starting data is on
//! the host, so the first launch pays for the uploads.

use std::collections::HashMap;
use std::ops::Range;

use hetdsl::Report;

use super::{LoopRun, Variant};

/// How much of a buffer a package reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Its own elements (pattern 1:1).
    Slice,
    /// Every element.
    Whole,
    /// Its own elements and `r` rows on each side.
    Halo(u64),
}

/// One buffer argument of a launch.
#[derive(Debug, Clone, Copy)]
pub struct Use {
    /// The buffer, numbered by the caller.
    pub buffer: usize,
    pub reach: Reach,
    pub reads: bool,
    pub writes: bool,
}

/// A launch's geometry: work-items per balancing unit (the work-group size in 1-D, a row of
/// work-groups in 2-D) and elements per row (1 in 1-D, the grid's width in 2-D).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub items_per_unit: u64,
    pub row_len: u64,
}

/// Who holds what, fresh.
#[derive(Debug, Clone)]
pub struct Residency {
    /// Per buffer: (elements, bytes per element).
    buffers: Vec<(u64, u64)>,
    fresh: HashMap<(usize, usize), Vec<Range<u64>>>,
}

impl Residency {
    /// Buffers as (elements, bytes per element), none on any device yet.
    pub fn new(buffers: &[(u64, u64)]) -> Self {
        Residency { buffers: buffers.to_vec(), fresh: HashMap::new() }
    }

    /// The bytes `report`'s merged packages needed moved in, and the ownership after it.
    pub fn launch(&mut self, report: &Report, shape: Shape, uses: &[Use]) -> u64 {
        let packages: Vec<(usize, Range<u64>)> = report
            .trace
            .iter()
            .filter(|t| t.merged)
            .map(|t| {
                let p = t.package;
                (
                    t.device,
                    p.offset * shape.items_per_unit..(p.offset + p.len) * shape.items_per_unit,
                )
            })
            .collect();
        let mut bytes = 0;
        for u in uses.iter().filter(|u| u.reads) {
            let (len, elem) = self.buffers[u.buffer];
            for (device, items) in &packages {
                let need = reach(u.reach, items.clone(), len, shape.row_len);
                let set = self.fresh.entry((u.buffer, *device)).or_default();
                bytes += missing(set, need.clone()) * elem;
                insert(set, need);
            }
        }
        for u in uses.iter().filter(|u| u.writes) {
            for (device, items) in &packages {
                for ((buffer, holder), set) in self.fresh.iter_mut() {
                    if *buffer == u.buffer && holder != device {
                        remove(set, items.clone());
                    }
                }
                insert(self.fresh.entry((u.buffer, *device)).or_default(), items.clone());
            }
        }
        bytes
    }
}

/// Fills a session variant's bytes per step: moved into the devices and read back, from the
/// session's counters; the minimum for the partitions the launches had, from a [`Residency`]
/// fed every launch in order; and the steady minimum, had every step kept its partition for
/// the next (a [`Residency`] fed the step and the one after it with this step's packages, then
/// this step again). `uses(k, report)`: the buffer arguments of that launch of step `k`.
pub(crate) fn count_moves(
    v: &mut Variant,
    run: &LoopRun,
    buffers: &[(u64, u64)],
    shape: Shape,
    uses: &dyn Fn(usize, &Report) -> Vec<Use>,
) {
    let per_step = |f: &dyn Fn(&Report) -> u64| -> Vec<u64> {
        run.reports.iter().map(|step| step.iter().map(f).sum()).collect()
    };
    v.moved_per_step = Some(per_step(&|r| {
        let m = r.moved();
        m.host_to_device + m.device_to_device
    }));
    v.read_back_per_step = Some(per_step(&|r| r.moved().device_to_host));
    let mut res = Residency::new(buffers);
    let mut minimum = Vec::new();
    for (k, step) in run.reports.iter().enumerate() {
        minimum.push(step.iter().map(|r| res.launch(r, shape, &uses(k, r))).sum());
    }
    v.minimum_per_step = Some(minimum);
    let steady = run.reports.iter().enumerate().map(|(k, step)| {
        let mut res = Residency::new(buffers);
        for j in [k, k + 1] {
            step.iter().for_each(|r| {
                res.launch(r, shape, &uses(j, r));
            });
        }
        step.iter().map(|r| res.launch(r, shape, &uses(k, r))).sum()
    });
    v.steady_per_step = Some(steady.collect());
}

fn reach(r: Reach, items: Range<u64>, len: u64, row_len: u64) -> Range<u64> {
    match r {
        Reach::Slice => items.start.min(len)..items.end.min(len),
        Reach::Whole => 0..len,
        Reach::Halo(h) => {
            let pad = h * row_len;
            items.start.saturating_sub(pad)..(items.end + pad).min(len)
        }
    }
}

/// Elements of `r` not covered by the sorted, disjoint `set`.
fn missing(set: &[Range<u64>], r: Range<u64>) -> u64 {
    let covered: u64 =
        set.iter().map(|s| s.end.min(r.end).saturating_sub(s.start.max(r.start))).sum();
    (r.end - r.start.min(r.end)) - covered
}

fn insert(set: &mut Vec<Range<u64>>, r: Range<u64>) {
    if r.is_empty() {
        return;
    }
    set.push(r);
    set.sort_by_key(|s| s.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(set.len());
    for s in set.drain(..) {
        match merged.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => merged.push(s),
        }
    }
    *set = merged;
}

fn remove(set: &mut Vec<Range<u64>>, r: Range<u64>) {
    let mut kept = Vec::with_capacity(set.len() + 1);
    for s in set.drain(..) {
        if s.end <= r.start || s.start >= r.end {
            kept.push(s);
            continue;
        }
        if s.start < r.start {
            kept.push(s.start..r.start);
        }
        if s.end > r.end {
            kept.push(r.end..s.end);
        }
    }
    *set = kept;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_sets_count_what_is_missing() {
        let mut s = Vec::new();
        insert(&mut s, 10..20);
        insert(&mut s, 30..40);
        insert(&mut s, 18..31);
        assert_eq!(s, vec![10..40]);
        assert_eq!(missing(&s, 0..50), 20);
        remove(&mut s, 15..25);
        assert_eq!(s, vec![10..15, 25..40]);
        assert_eq!(missing(&s, 12..30), 10);
        assert_eq!(missing(&s, 5..5), 0);
    }

    #[test]
    fn halos_move_two_rows_per_boundary_and_whole_reads_gather_the_rest() {
        use hetdsl::report::{PackageTrace, Transfer};
        let trace = |parts: &[(usize, u64, u64)]| -> Report {
            let json = serde_json::json!({
                "kernel": "k", "balancer": "b", "total_groups": 4, "devices": [], "trace": [],
                "roi_seconds": 0.0, "binary_seconds": 0.0, "balance": 1.0, "speedup": null,
                "smax": null, "efficiency": null, "faults": []
            });
            let mut r: Report = serde_json::from_value(json).unwrap();
            r.trace = parts
                .iter()
                .map(|&(device, offset, len)| PackageTrace {
                    device,
                    package: hetdsl::Package { offset, len },
                    host_start: 0.0,
                    host_end: 0.0,
                    kernel_seconds: None,
                    written: Transfer::default(),
                    read: Transfer::default(),
                    merged: true,
                    idle_before: None,
                })
                .collect();
            r
        };
        // A 2-D grid of 8 units of 2 rows of 10 elements (4 bytes each), split 0..4 | 4..8.
        let shape = Shape { items_per_unit: 20, row_len: 10 };
        let mut res = Residency::new(&[(160, 4), (160, 4)]);
        let split = trace(&[(0, 0, 4), (1, 4, 4)]);
        let a_to_b = [
            Use { buffer: 0, reach: Reach::Halo(1), reads: true, writes: false },
            Use { buffer: 1, reach: Reach::Slice, reads: false, writes: true },
        ];
        let b_to_a = [
            Use { buffer: 1, reach: Reach::Halo(1), reads: true, writes: false },
            Use { buffer: 0, reach: Reach::Slice, reads: false, writes: true },
        ];
        // First launch: each device uploads its 8 rows and one halo row: 2 · 9 rows.
        assert_eq!(res.launch(&split, shape, &a_to_b), 2 * 9 * 10 * 4);
        // Then only the rows across the boundary: one row each way.
        assert_eq!(res.launch(&split, shape, &b_to_a), 2 * 10 * 4);
        assert_eq!(res.launch(&split, shape, &a_to_b), 2 * 10 * 4);
        // A whole read after 1:1 writes gathers every other device's part.
        let mut res = Residency::new(&[(80, 16)]);
        let shape = Shape { items_per_unit: 10, row_len: 1 };
        let three = trace(&[(0, 0, 2), (1, 2, 5), (2, 7, 1)]);
        let write = [Use { buffer: 0, reach: Reach::Slice, reads: true, writes: true }];
        let gather = [Use { buffer: 0, reach: Reach::Whole, reads: true, writes: false }];
        assert_eq!(res.launch(&three, shape, &write), 80 * 16);
        assert_eq!(res.launch(&three, shape, &gather), 2 * 80 * 16);
        assert_eq!(res.launch(&three, shape, &write), 0);
        assert_eq!(res.launch(&three, shape, &gather), 2 * 80 * 16);
    }
}
