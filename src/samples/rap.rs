//! RAP (the papers' "Rap"): the Resource Allocation Problem's dynamic programme. Each launch
//! computes one stage, `next[j] = max over x ≤ j of previous[j − x] + profit[x]`, one work-item
//! per j; work-item j loops j + 1 times, so later packages cost more (irregular by design).

use hetdsl::{Balancer, Launch, Program, Report, Runtime};
use std::ops::Range;

use super::check::{all_equal, par_map, Verdict};
use super::rng::Rng;
use super::{cached_reference, place, Cover, Sample, Size};

pub const LWS: usize = 64;

/// A non-decreasing random profit table for 0..len units with `profit[0] = 0` (more resource
/// never earns less), steps of 0..max_step.
pub fn profit_table(len: usize, max_step: u64, rng: &mut Rng) -> Vec<i32> {
    let mut total = 0i32;
    (0..len)
        .map(|j| {
            if j > 0 {
                total += rng.below(max_step) as i32;
            }
            total
        })
        .collect()
}

/// CPU reference of one stage at `j`.
pub fn reference_stage_at(previous: &[i32], profit: &[i32], j: usize) -> i32 {
    (0..=j).map(|x| previous[j - x] + profit[x]).max().unwrap_or(i32::MIN)
}

/// CPU reference of the whole programme: the best profit for every budget 0..units after
/// allocating to every activity (one profit table per activity).
pub fn reference_solve(profits: &[Vec<i32>]) -> Vec<i32> {
    let units = profits.first().map_or(0, Vec::len);
    let mut best = vec![0; units];
    let all: Vec<usize> = (0..units).collect();
    for profit in profits {
        best = par_map(&all, |j| reference_stage_at(&best, profit, j));
    }
    best
}

hetdsl::kernel! {
    /// One budget j per work-item; a package [a, b) reads the prefixes [0, b) of both rows,
    /// so both are given whole.
    #[kernel(file = "kernels/rap.cl", local = 64)]
    pub struct RapKernel {
        fn rap_stage(
            #[input(whole)] previous: &[i32],
            #[input(whole)] profit: &[i32],
            #[output(1:1)] next: &mut [i32],
        );
    }
}

/// Run one stage (co-executed) with `previous` and `profit`, writing `next`.
pub fn run_stage(
    kernel: &RapKernel,
    previous: &[i32],
    profit: &[i32],
    next: &mut [i32],
    devices: Option<&[usize]>,
    balancer: Option<Box<dyn Balancer>>,
    groups: Option<Range<u64>>,
) -> hetdsl::Result<Report> {
    let launch = kernel.launch(next.len(), previous, profit, next)?;
    place(launch, devices, balancer, groups).run()
}

/// One stage of the programme, as the suite runs it.
pub struct Rap {
    size: Size,
    kernel: RapKernel,
    /// Best profits of the activities before this stage, for 0..units budgets.
    pub previous: Vec<i32>,
    pub profit: Vec<i32>,
    next: Vec<i32>,
    reference: Option<(Vec<usize>, Vec<i32>)>,
}

impl Rap {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let units = match size {
            Size::Small => 4096,
            Size::Paper => 3 << 20,
        };
        let mut rng = Rng::new(0x0AA9);
        // `previous` is itself a stage's output: a non-decreasing row.
        let previous = profit_table(units, 100, &mut rng);
        let profit = profit_table(units, 100, &mut rng);
        let kernel = RapKernel::new(runtime)?;
        Ok(Rap { size, kernel, previous, profit, next: vec![0; units], reference: None })
    }
}

impl Sample for Rap {
    fn name(&self) -> &str {
        "rap"
    }

    fn describe(&self) -> String {
        format!("1 stage over {} resource units, lws {LWS}", self.next.len())
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.next.fill(i32::MIN);
        self.kernel.launch(self.next.len(), &self.previous, &self.profit, &mut self.next)
    }

    fn verify(&mut self) -> Verdict {
        let (previous, profit) = (&self.previous, &self.profit);
        let (indices, expected) = cached_reference(
            &mut self.reference,
            (self.next.len(), Cover::groups(self.next.len(), 64)),
            self.size,
            17,
            |j| reference_stage_at(previous, profit, j),
        );
        let got: Vec<i32> = indices.iter().map(|&j| self.next[j]).collect();
        // Integers: exact.
        all_equal("best profits", &got, expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_profits_give_one_per_activity() {
        // With profit 1 for any allocation (including 0 units), N activities earn N.
        let profits = vec![vec![1; 16]; 5];
        assert!(reference_solve(&profits).iter().all(|&g| g == 5));
    }

    #[test]
    fn small_programme_by_hand() {
        // Two activities, budgets 0..=3: a = [0, 4, 5, 6], b = [0, 3, 7, 8].
        // Budget 3: a1 + b2 = 11 beats a3 = 6, b3 = 8, a2 + b1 = 8.
        let profits = vec![vec![0, 4, 5, 6], vec![0, 3, 7, 8]];
        assert_eq!(reference_solve(&profits), vec![0, 4, 7, 11]);
    }
}
