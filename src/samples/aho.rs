//! Aho (the papers' "Aho"): Parallel Failureless Aho-Corasick string matching (PFAC, Lin et
//! al.), one work-item per text position. Patterns and text are DNA-like (ACGT), the papers'
//! protein/genome use case; the text mixes random stretches (walks end after a few bytes) with
//! stretches built from the patterns' source motifs (walks run long): irregular.

use std::collections::HashMap;

use hetdsl::{Launch, Program, Runtime};

use super::check::{all_equal, all_written, par_map, Verdict};
use super::rng::Rng;
use super::{group_picks, run_seed, Sample, Size};

pub const LWS: usize = 64;
const ALPHABET: &[u8] = b"ACGT";
pub const TRAP: i32 = -1;

/// The PFAC transition table: `states × 256` next states, final states numbered 1..=patterns
/// (pattern k, 0-based, ends in state k + 1), initial state patterns + 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub next: Vec<i32>,
    pub patterns: i32,
    pub initial: i32,
}

impl Table {
    /// Build the failureless trie of `patterns` (distinct, non-empty).
    pub fn build(patterns: &[Vec<u8>]) -> Table {
        let finals: HashMap<&[u8], i32> =
            patterns.iter().enumerate().map(|(k, p)| (p.as_slice(), k as i32 + 1)).collect();
        let initial = patterns.len() as i32 + 1;
        let mut inner: HashMap<&[u8], i32> = HashMap::new();
        let mut states = initial + 1;
        let mut edges = Vec::new();
        for p in patterns {
            let mut parent = initial;
            for end in 1..=p.len() {
                let prefix = &p[..end];
                let state = match finals.get(prefix) {
                    Some(&f) => f,
                    None => *inner.entry(prefix).or_insert_with(|| {
                        states += 1;
                        states - 1
                    }),
                };
                edges.push((parent, p[end - 1], state));
                parent = state;
            }
        }
        let mut next = vec![TRAP; states as usize * 256];
        for (from, byte, to) in edges {
            next[from as usize * 256 + byte as usize] = to;
        }
        Table { next, patterns: patterns.len() as i32, initial }
    }
}

/// CPU reference, straight from the definition and independent of the table: the number
/// (1-based) of the longest pattern that starts at `start`, or 0.
pub fn reference_match(patterns: &[Vec<u8>], text: &[u8], start: usize) -> i32 {
    let rest = &text[start..];
    let mut best = (0usize, 0i32);
    for (k, p) in patterns.iter().enumerate() {
        if p.len() > best.0 && rest.starts_with(p) {
            best = (p.len(), k as i32 + 1);
        }
    }
    best.1
}

/// The matches at `picks` (sorted positions) against the reference from the definition,
/// exactly, and every position written. With one pick in every work-group, drawn afresh per
/// run, a wrong group fails as soon as its values differ at the position drawn.
pub fn check(patterns: &[Vec<u8>], text: &[u8], matches: &[i32], picks: &[usize]) -> Verdict {
    let expected = par_map(picks, |s| reference_match(patterns, text, s));
    let got: Vec<i32> = picks.iter().map(|&s| matches[s]).collect();
    let whole = Verdict::new(
        matches.len() == text.len(),
        text.len(),
        format!("{} matches for {} positions", matches.len(), text.len()),
    );
    all_equal("matches", &got, &expected)
        .and(whole)
        .and(all_written("matches", matches, |&m| m == -7))
}

/// Deterministic patterns and text. `motifs` random strands; patterns are pieces of them (some
/// with a mutated last base), a few random short ones, and tandem repeats `(AC)^n` / `(CA)^n`
/// up to n = `max_repeat` (microsatellites). The text mixes random stretches (walks end after a
/// few bytes), copies of motifs (walks of tens of bytes) and tandem-repeat regions (walks run up
/// to 2·`max_repeat` bytes): PFAC's worst case, and what makes the kernel irregular.
pub fn generate(
    text_len: usize,
    pattern_count: usize,
    max_repeat: usize,
    seed: u64,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut rng = Rng::new(seed);
    let base = |rng: &mut Rng| ALPHABET[rng.below(4) as usize];
    let motifs: Vec<Vec<u8>> = (0..8).map(|_| (0..48).map(|_| base(&mut rng)).collect()).collect();
    let mut patterns: Vec<Vec<u8>> = Vec::new();
    // Tandem repeats of every length max_repeat, max_repeat / 2, ..., 1 units.
    let mut n = max_repeat;
    while n > 0 {
        patterns.push(b"AC".repeat(n));
        patterns.push(b"CA".repeat(n));
        n /= 2;
    }
    while patterns.len() < pattern_count {
        let p: Vec<u8> = if rng.below(5) == 0 {
            (0..4 + rng.below(8)).map(|_| base(&mut rng)).collect()
        } else {
            let m = &motifs[rng.below(motifs.len() as u64) as usize];
            let len = 6 + rng.below(27) as usize;
            let from = rng.below((m.len() - len) as u64 + 1) as usize;
            let mut p = m[from..from + len].to_vec();
            if rng.below(4) == 0 {
                *p.last_mut().unwrap_or(&mut 0) = base(&mut rng);
            }
            p
        };
        if !patterns.contains(&p) {
            patterns.push(p);
        }
    }
    let mut text = Vec::with_capacity(text_len);
    while text.len() < text_len {
        let stretch = 256 + rng.below(4096.max(4 * max_repeat as u64)) as usize;
        let end = text.len() + stretch;
        match rng.below(3) {
            0 => text.extend((0..stretch).map(|_| base(&mut rng))),
            1 => {
                while text.len() < end {
                    text.extend_from_slice(&motifs[rng.below(motifs.len() as u64) as usize]);
                }
            }
            _ => {
                while text.len() < end {
                    text.extend_from_slice(b"AC");
                }
            }
        }
    }
    text.truncate(text_len);
    (patterns, text)
}

hetdsl::kernel! {
    /// One text position per work-item; the walk runs past the package, so the text is whole.
    #[kernel(file = "kernels/aho.cl", local = 64)]
    pub struct AhoKernel {
        fn pfac_match(
            #[input(whole)] text: &[u8],
            text_len: i32,
            #[input(whole)] table: &[i32],
            patterns: i32,
            initial_state: i32,
            #[output(1:1)] matches: &mut [i32],
        );
    }
}

pub struct Aho {
    size: Size,
    kernel: AhoKernel,
    pub patterns: Vec<Vec<u8>>,
    pub text: Vec<u8>,
    pub table: Table,
    matches: Vec<i32>,
    /// Checks so far: each draws its own positions.
    checks: u64,
}

impl Aho {
    pub fn new(size: Size, runtime: &Runtime) -> hetdsl::Result<Self> {
        let (text_len, max_repeat) = match size {
            Size::Small => (32 * 1024, 16),
            Size::Paper => (512 << 20, 6144),
        };
        let (patterns, text) = generate(text_len, 96, max_repeat, 0xA40);
        let table = Table::build(&patterns);
        let kernel = AhoKernel::new(runtime)?;
        Ok(Aho { size, kernel, patterns, text, table, matches: vec![0; text_len], checks: 0 })
    }
}

impl Sample for Aho {
    fn name(&self) -> &str {
        "aho"
    }

    fn describe(&self) -> String {
        format!(
            "{} text bytes, {} patterns, {} states, lws {LWS}",
            self.text.len(),
            self.patterns.len(),
            self.table.next.len() / 256
        )
    }

    fn program(&self) -> &Program {
        self.kernel.program()
    }

    fn launch(&mut self) -> hetdsl::Result<Launch<'_>> {
        self.matches.fill(-7);
        self.kernel.launch(
            self.text.len(),
            &self.text,
            self.text.len() as i32,
            &self.table.next,
            self.table.patterns,
            self.table.initial,
            &mut self.matches,
        )
    }

    fn verify(&mut self) -> Verdict {
        self.checks += 1;
        let picks = group_picks(self.text.len(), self.size, LWS, run_seed(16, self.checks));
        check(&self.patterns, &self.text, &self.matches, &picks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walk the table from `start` as the kernel does.
    fn walk(table: &Table, text: &[u8], start: usize) -> i32 {
        let (mut state, mut found) = (table.initial, 0);
        for &b in &text[start..] {
            state = table.next[state as usize * 256 + b as usize];
            if state == TRAP {
                break;
            }
            if state <= table.patterns {
                found = state;
            }
        }
        found
    }

    #[test]
    fn pfac_example_from_the_paper_repository() {
        // PFAC's test/pattern/example_pattern and test/data/example_input.
        let patterns: Vec<Vec<u8>> =
            ["AB", "ABG", "BEDE", "ED"].iter().map(|s| s.as_bytes().to_vec()).collect();
        let text = b"ABEDEDABG";
        let table = Table::build(&patterns);
        let expected = [1, 3, 4, 0, 4, 0, 2, 0, 0];
        for (s, &want) in expected.iter().enumerate() {
            assert_eq!(reference_match(&patterns, text, s), want, "reference at {s}");
            assert_eq!(walk(&table, text, s), want, "table walk at {s}");
        }
    }

    #[test]
    fn generated_text_has_matches_and_long_walks() {
        let (patterns, text) = generate(20_000, 96, 16, 1);
        assert_eq!(text.len(), 20_000);
        let table = Table::build(&patterns);
        let hits = (0..text.len()).filter(|&s| walk(&table, &text, s) != 0).count();
        assert!(hits > 200, "only {hits} matches");
    }

    #[test]
    fn one_wrong_work_group_fails_the_per_group_check() {
        let (patterns, text) = generate(64 * 256, 96, 16, 3);
        let table = Table::build(&patterns);
        let good: Vec<i32> = (0..text.len()).map(|s| walk(&table, &text, s)).collect();
        let (_, stale_text) = generate(64 * 256, 96, 16, 4);
        let groups = text.len() / LWS;
        // Each way a group can be wrong: the values it would hold instead.
        let wrong: [(&str, &dyn Fn(usize) -> i32); 5] = [
            ("zeros", &|_| 0),
            ("shifted by a work-item", &|s| good[s + 1]),
            ("shifted by a work-group", &|s| good[s + LWS]),
            ("another package's", &|s| good[(s + 97 * LWS) % text.len()]),
            ("stale text", &|s| walk(&table, &stale_text, s)),
        ];
        for (what, value) in wrong {
            // The groups that this makes wrong at every position, so that any pick must see it
            // (a group wrong at a few positions only is caught when the pick lands on one).
            let hit: Vec<usize> = (0..groups - 1)
                .filter(|g| (g * LWS..(g + 1) * LWS).all(|s| good[s] != value(s)))
                .take(3)
                .collect();
            assert!(!hit.is_empty(), "{what}: no group wrong everywhere");
            for seed in 0..10 {
                let picks = super::super::group_picks(text.len(), Size::Paper, LWS, seed);
                assert_eq!(picks.len(), groups);
                assert!(check(&patterns, &text, &good, &picks).correct);
                for &g in &hit {
                    let mut o = good.clone();
                    (g * LWS..(g + 1) * LWS).for_each(|s| o[s] = value(s));
                    assert!(!check(&patterns, &text, &o, &picks).correct, "{what}, group {g}");
                }
            }
        }
    }
}
