//! A deliberately uneven split, for checking that a kernel gives the same output co-executed
//! as alone: random package sizes, handed to the devices in a random order, every device
//! getting at least two packages when the range allows. Seeded, so a failing split can be run
//! again. Not for speed: it ignores every device's speed.

use std::collections::VecDeque;

use super::{check_setup, Balancer, Completion, Next, Package, Setup};
use crate::error::Result;
use crate::sim::SplitMix64;

#[derive(Debug, Clone)]
pub struct RandomSplit {
    seed: u64,
    /// Each device's packages, in the order it runs them.
    queues: Vec<VecDeque<Package>>,
    /// Packages of lost devices, handed to whoever asks next.
    orphans: Vec<Package>,
}

impl RandomSplit {
    pub fn new(seed: u64) -> Self {
        RandomSplit { seed, queues: Vec::new(), orphans: Vec::new() }
    }

    /// The split of `total` units over `devices` devices: `(device, package)` in range order.
    pub fn plan(seed: u64, total: u64, devices: usize) -> Vec<(usize, Package)> {
        // Nothing to cut (the cuts below need a unit), or no one to give it to.
        if total == 0 || devices == 0 {
            return Vec::new();
        }
        let mut rng = SplitMix64::new(seed);
        let n = devices.max(1) as u64;
        // Two packages per device when the range allows, up to four, never more than `total`.
        let count = if total >= 2 * n { rng.range(2 * n, (4 * n).min(total)) } else { total };
        // `count - 1` distinct cuts inside the range, drawn uniformly: uneven sizes.
        let mut cuts = std::collections::BTreeSet::new();
        while (cuts.len() as u64) < count - 1 {
            cuts.insert(rng.range(1, total - 1));
        }
        let mut bounds: Vec<u64> = Vec::with_capacity(count as usize + 1);
        bounds.push(0);
        bounds.extend(cuts);
        bounds.push(total);
        // Owners: each device twice (when there are enough packages), the rest at random, then
        // shuffled so that no device always runs the start of the range.
        let mut owners: Vec<usize> = Vec::with_capacity(count as usize);
        if count >= 2 * n {
            owners.extend((0..devices).flat_map(|d| [d, d]));
        }
        while (owners.len() as u64) < count {
            if count < 2 * n {
                owners.push(owners.len() % devices.max(1));
            } else {
                owners.push(rng.range(0, n - 1) as usize);
            }
        }
        for i in (1..owners.len()).rev() {
            let j = rng.range(0, i as u64) as usize;
            owners.swap(i, j);
        }
        bounds
            .windows(2)
            .zip(owners)
            .map(|(w, d)| (d, Package { offset: w[0], len: w[1] - w[0] }))
            .collect()
    }
}

impl Balancer for RandomSplit {
    fn name(&self) -> String {
        format!("random-split(seed {})", self.seed)
    }

    fn start(&mut self, setup: &Setup) -> Result<()> {
        check_setup(setup)?;
        let n = setup.devices.len();
        self.queues = vec![VecDeque::new(); n];
        self.orphans.clear();
        for (d, p) in Self::plan(self.seed, setup.total_groups, n) {
            self.queues[d].push_back(p);
        }
        Ok(())
    }

    fn next(&mut self, device: usize, _now: f64) -> Next {
        match self
            .queues
            .get_mut(device)
            .and_then(VecDeque::pop_front)
            .or_else(|| self.orphans.pop())
        {
            Some(p) => Next::Run(p),
            None => Next::Done,
        }
    }

    fn completed(&mut self, _done: &Completion) {}

    fn device_lost(&mut self, device: usize) {
        if let Some(q) = self.queues.get_mut(device) {
            self.orphans.extend(q.drain(..));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RandomSplit;

    #[test]
    fn the_split_tiles_the_range_and_gives_every_device_two_packages() {
        for seed in 0..200u64 {
            for (total, n) in [(64u64, 2usize), (5, 2), (3, 2), (1, 1), (1000, 3), (4, 2), (7, 4)] {
                let plan = RandomSplit::plan(seed, total, n);
                let mut next = 0;
                for (d, p) in &plan {
                    assert!(
                        *d < n && p.len > 0 && p.offset == next,
                        "{seed} {total} {n}: {plan:?}"
                    );
                    next = p.end();
                }
                assert_eq!(next, total);
                if total >= 2 * n as u64 {
                    for d in 0..n {
                        let mine = plan.iter().filter(|(o, _)| *o == d).count();
                        assert!(mine >= 2, "device {d}: {plan:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn nothing_to_split_or_no_device_is_an_empty_plan_not_a_hang() {
        assert_eq!(RandomSplit::plan(1, 0, 2), []);
        assert_eq!(RandomSplit::plan(1, 5, 0), []);
    }

    #[test]
    fn splits_are_uneven_seeded_and_not_always_in_device_order() {
        let a = RandomSplit::plan(7, 640, 2);
        assert_eq!(a, RandomSplit::plan(7, 640, 2), "seeded");
        let sizes: Vec<u64> = a.iter().map(|(_, p)| p.len).collect();
        assert!(sizes.iter().any(|&s| s != sizes[0]), "uneven: {sizes:?}");
        let first_owner_varies = (0..50)
            .map(|s| RandomSplit::plan(s, 640, 2)[0].0)
            .collect::<std::collections::HashSet<_>>();
        assert_eq!(first_owner_varies.len(), 2);
    }
}
