//! Reduction (the AMD APP SDK's sample): the sum of a large array of unsigned integers, one
//! partial sum per work-group. The kernel indexes its output with `get_group_id(0)`, as the SDK
//! writes it; co-executed, each package is launched with a global offset, and hetdsl's rewrite
//! of the built-ins keeps the group index that of the whole NDRange. Input 1:1 (one uint4 per
//! work-item), output 1:256 (one sum per work-group). Integer sums are exact, so the check is
//! bit for bit.

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_equal, Verdict};
use super::{cached_reference, Cover, Sample, Size};

pub const LWS: usize = 256;

hetdsl::kernel! {
    /// One uint4 per work-item in, one sum per work-group of 256 out.
    #[kernel(file = "kernels/reduction.cl", local = 256)]
    pub struct ReductionKernel {
        fn reduce(
            #[input(1:1)] input: &[[u32; 4]],
            #[output(1:256)] output: &mut [u32],
            #[local] sdata: [u32; 256],
        );
    }
}

pub struct Reduction {
    size: Size,
    kernel: ReductionKernel,
    input: Vec<[u32; 4]>,
    sums: Vec<u32>,
    reference: Option<(Vec<usize>, Vec<u32>)>,
}

impl Reduction {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let items = match size {
            Size::Small => 1 << 16,
            Size::Paper => 1 << 24,
        };
        let mut rng = super::rng::Rng::new(31);
        let input = (0..items)
            .map(|_| std::array::from_fn(|_| rng.below(1 << 20) as u32))
            .collect::<Vec<_>>();
        let kernel = ReductionKernel::new(runtime)?;
        Ok(Reduction { size, kernel, input, sums: vec![0; items / LWS], reference: None })
    }

    /// The whole array's sum, from the last run's per-group sums.
    pub fn total(&self) -> u64 {
        self.sums.iter().map(|&s| s as u64).sum()
    }
}

impl Sample for Reduction {
    fn name(&self) -> &str {
        "reduction"
    }

    fn describe(&self) -> String {
        format!("{} uint4, lws {LWS}", self.input.len())
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        // A poison no group of sums below 2^20 · 4 · 256 can reach.
        self.sums.fill(u32::MAX);
        self.kernel.launch(self.input.len(), &self.input, &mut self.sums)
    }

    fn verify(&mut self) -> Verdict {
        let input = &self.input;
        let (indices, expected) = cached_reference(
            &mut self.reference,
            (self.sums.len(), Cover::every(self.sums.len())),
            self.size,
            31,
            |g| {
                // Sequential, in u64, then reduced: the device's wrapping u32 adds give the
                // same value because no group's sum reaches 2^32.
                let group = &input[g * LWS..(g + 1) * LWS];
                group.iter().flatten().map(|&v| v as u64).sum::<u64>() as u32
            },
        );
        let got: Vec<u32> = indices.iter().map(|&g| self.sums[g]).collect();
        all_equal("group sums", &got, expected)
    }
}
