//! A progress bar on stderr for the long runners (the suite, the inflection runner, the
//! simulator): what runs now (kernel, device set, balancer, repetition), how many runs are done
//! of how many, the time elapsed and an estimate of the time left. Hidden when stderr is not a
//! terminal (a log file, CI), so that nothing but the results' own lines is written there.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A handle to the bar; clones show the same bar.
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    /// What runs now, without the repetition (which [`Progress::rep`] adds).
    what: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Progress {
    /// A bar of `total` runs on stderr, drawn only when stderr is a terminal.
    pub fn new(total: u64) -> Progress {
        let target = match std::io::stderr().is_terminal() {
            true => ProgressDrawTarget::stderr(),
            false => ProgressDrawTarget::hidden(),
        };
        Progress::with_target(total, target)
    }

    /// A bar that draws nothing, for callers without one.
    pub fn hidden() -> Progress {
        Progress::with_target(0, ProgressDrawTarget::hidden())
    }

    fn with_target(total: u64, target: ProgressDrawTarget) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), target);
        let style = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {eta} | {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        // Redrawn every second even while one long run holds the bar still.
        bar.enable_steady_tick(Duration::from_secs(1));
        Progress { bar, what: Default::default() }
    }

    /// The total number of runs, once known (a runner may learn it after its first kernel).
    pub fn set_total(&self, total: u64) {
        self.bar.set_length(total);
    }

    pub fn total(&self) -> u64 {
        self.bar.length().unwrap_or(0)
    }

    pub fn done(&self) -> u64 {
        self.bar.position()
    }

    /// What runs now: for example `binomial · set 0,1 · sigmoid`.
    pub fn set_what(&self, what: impl Into<String>) {
        let what = what.into();
        self.bar.set_message(what.clone());
        if let Ok(mut w) = self.what.lock() {
            *w = what;
        }
    }

    /// Repetition `k` (from 0) of `reps` of what runs now is starting.
    pub fn rep(&self, k: usize, reps: usize) {
        let what = self.what.lock().map(|w| w.clone()).unwrap_or_default();
        self.bar.set_message(format!("{what} · rep {}/{reps}", k + 1));
    }

    /// `runs` more runs are done (or skipped: the estimate of what is left counts them too).
    pub fn advance(&self, runs: u64) {
        self.bar.inc(runs);
    }

    /// At least `position` runs are done: a runner whose step ended early (an error, a skipped
    /// set) counts its remaining runs as done, so that the estimate stays right.
    pub fn reach(&self, position: u64) {
        if self.bar.position() < position {
            self.bar.set_position(position);
        }
    }

    /// Runs `f` (which prints on stdout or stderr) with the bar cleared, so that lines and bar
    /// do not interleave on a terminal.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_runs_and_tells_the_repetition() {
        let p = Progress::with_target(10, ProgressDrawTarget::hidden());
        p.set_what("binomial · set 0,1 · sigmoid");
        p.rep(1, 3);
        assert_eq!(p.bar.message(), "binomial · set 0,1 · sigmoid · rep 2/3");
        p.advance(3);
        p.clone().advance(2);
        assert_eq!((p.done(), p.total()), (5, 10), "clones advance the same bar");
        p.reach(4);
        assert_eq!(p.done(), 5, "reach never goes back");
        p.reach(8);
        assert_eq!(p.done(), 8);
        p.set_total(12);
        assert_eq!(p.total(), 12);
    }

    #[test]
    fn hidden_when_stderr_is_not_a_terminal() {
        // Under `cargo test` stderr is captured or piped, not a terminal.
        if !std::io::stderr().is_terminal() {
            assert!(Progress::new(3).bar.is_hidden());
        }
        assert!(Progress::hidden().bar.is_hidden());
    }
}
