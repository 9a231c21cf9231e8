//! Energy of a run: GPU power through NVML, sampled every 45 ms as the Sigmoid paper does, and CPU
//! package energy through RAPL counters where the kernel exposes them readable.
//!
//! Optional by nature: where neither is readable (no NVIDIA driver, RAPL root-only or absent),
//! [`Sampler::start`] still works and [`Sampler::stop`] says what was unavailable, so callers
//! print "n/a" rather than fail. NVML is loaded at run time (`libnvidia-ml.so.1`), nothing links
//! against it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The Sigmoid paper samples power every 45 ms.
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(45);

/// Energy of one power domain over the sampled interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DomainEnergy {
    /// `gpu0 NVIDIA H200`, `package-0`, …
    pub name: String,
    pub joules: f64,
    /// How it was obtained: `nvml-counter`, `nvml-power-samples`, `rapl`.
    pub method: String,
}

/// What a [`Sampler`] measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnergyReading {
    pub seconds: f64,
    pub samples: usize,
    pub domains: Vec<DomainEnergy>,
    /// Why some sources gave nothing (e.g. "NVML: libnvidia-ml.so.1 not found").
    pub unavailable: Vec<String>,
}

impl EnergyReading {
    /// Total joules over every domain; `None` when nothing was readable.
    pub fn joules(&self) -> Option<f64> {
        (!self.domains.is_empty()).then(|| self.domains.iter().map(|d| d.joules).sum())
    }
    /// Energy-delay product, J·s.
    pub fn edp(&self) -> Option<f64> {
        self.joules().map(|j| j * self.seconds)
    }
}

/// Trapezoidal integral of power samples `(seconds, watts)`, in joules.
pub fn integrate(samples: &[(f64, f64)]) -> f64 {
    samples.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum()
}

/// Cumulative joules at each power sample `(seconds, watts)`: the trapezoid integral over the
/// readable (finite) samples up to it.
fn running_integral(samples: &[(f64, f64)]) -> Vec<f64> {
    let (mut total, mut last) = (0.0, None);
    samples
        .iter()
        .map(|&sample| {
            if sample.1.is_finite() {
                if let Some(previous) = last {
                    total += integrate(&[previous, sample]);
                }
                last = Some(sample);
            }
            total
        })
        .collect()
}

/// Difference of a counter that wraps at `max`.
pub fn counter_delta(start: u64, end: u64, max: u64) -> u64 {
    if end >= start {
        end - start
    } else {
        max.saturating_sub(start) + end
    }
}

/// Samples power in the background between `start` and `stop`.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Recording>>,
}

impl Sampler {
    /// Start sampling every `period`. Returns once the starting counters are read, so that
    /// opening NVML (tens of milliseconds) does not eat into the measured work.
    pub fn start(period: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ready, started) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("hetdsl-energy".into())
            .spawn(move || sample(period, &flag, ready))
            .ok();
        // An error means the thread ended early; `stop` then reports what it got.
        let _ = started.recv();
        Sampler { stop, handle }
    }

    /// Stop and return what was measured over the whole interval.
    pub fn stop(self) -> EnergyReading {
        self.finish().whole()
    }

    /// Stop and return the energy of the part of the interval between `from` and `to` (a
    /// run's region of interest, without its set-up and read-back), each domain's cumulative
    /// energy interpolated linearly between the samples around them.
    pub fn stop_within(self, from: Instant, to: Instant) -> EnergyReading {
        self.finish().within(from, to)
    }

    fn finish(mut self) -> Recording {
        self.stop.store(true, Ordering::Release);
        // Wake the thread from its wait, so the interval ends now rather than up to a period
        // later (45 ms would be a tenth of a short run's energy and time).
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Recording {
                t0: Instant::now(),
                ticks: Vec::new(),
                domains: Vec::new(),
                unavailable: vec!["the sampling thread could not run".into()],
            },
        }
    }
}

/// Cumulative joules of one domain at each tick of a [`Recording`].
struct Series {
    name: String,
    method: &'static str,
    joules: Vec<f64>,
}

/// Everything a sampling thread read: tick times (seconds since `t0`) and each domain's
/// cumulative energy at every tick.
struct Recording {
    t0: Instant,
    ticks: Vec<f64>,
    domains: Vec<Series>,
    unavailable: Vec<String>,
}

impl Recording {
    fn whole(self) -> EnergyReading {
        let end = self.ticks.last().copied().unwrap_or(0.0);
        self.reading(0.0, end)
    }

    fn within(self, from: Instant, to: Instant) -> EnergyReading {
        let at = |i: Instant| i.saturating_duration_since(self.t0).as_secs_f64();
        let (from, to) = (at(from), at(to));
        self.reading(from, to.max(from))
    }

    fn reading(self, from: f64, to: f64) -> EnergyReading {
        let domains = self
            .domains
            .iter()
            .map(|d| DomainEnergy {
                name: d.name.clone(),
                joules: cumulative_at(&self.ticks, &d.joules, to)
                    - cumulative_at(&self.ticks, &d.joules, from),
                method: d.method.into(),
            })
            .collect();
        let samples = self.ticks.iter().filter(|&&t| t >= from && t <= to).count();
        EnergyReading { seconds: to - from, samples, domains, unavailable: self.unavailable }
    }
}

/// A cumulative series read at `t` (seconds), linearly between the ticks around it, clamped
/// to the ticks' span.
pub fn cumulative_at(ticks: &[f64], values: &[f64], t: f64) -> f64 {
    let n = ticks.len().min(values.len());
    if n == 0 {
        return 0.0;
    }
    let i = ticks[..n].partition_point(|&x| x <= t);
    if i == 0 {
        return values[0];
    }
    if i == n {
        return values[n - 1];
    }
    let (t0, t1, v0, v1) = (ticks[i - 1], ticks[i], values[i - 1], values[i]);
    if t1 <= t0 {
        return v1;
    }
    v0 + (v1 - v0) * (t - t0) / (t1 - t0)
}

/// NVML and RAPL, opened once per process: `nvmlInit` takes tens of milliseconds (far more
/// without the driver's persistence mode), which a suite's hundreds of sampled runs would pay
/// each time. Never closed: they live until the process ends.
struct Sources {
    nvml: Result<nvml::Nvml, String>,
    rapl: Result<rapl::Rapl, String>,
}

fn sources() -> &'static Sources {
    static SOURCES: std::sync::OnceLock<Sources> = std::sync::OnceLock::new();
    SOURCES.get_or_init(|| Sources {
        nvml: nvml::Nvml::open().map_err(|e| format!("NVML: {e}")),
        rapl: rapl::Rapl::open().map_err(|e| format!("RAPL: {e}")),
    })
}

fn sample(period: Duration, stop: &AtomicBool, ready: std::sync::mpsc::Sender<()>) -> Recording {
    let mut unavailable = Vec::new();
    let sources = sources();
    let nvml = sources.nvml.as_ref().map_err(|e| unavailable.push(e.clone())).ok();
    let rapl = sources.rapl.as_ref().map_err(|e| unavailable.push(e.clone())).ok();
    let gpus = nvml.as_ref().map(|n| n.devices()).unwrap_or_default();
    let names: Vec<String> =
        gpus.iter().map(|g| nvml.as_ref().map_or(String::new(), |n| n.name(g))).collect();
    let counters_start: Vec<Option<u64>> =
        gpus.iter().map(|g| nvml.as_ref().and_then(|n| n.energy_mj(g))).collect();
    let rapl_start = rapl.as_ref().map(|r| r.read()).unwrap_or_default();
    // The interval starts now, with the counters read; the caller may start its work.
    let t0 = Instant::now();
    let _ = ready.send(());
    let mut ticks = Vec::new();
    // Per GPU: the driver's counter (mJ since the start) where it has one, else power samples.
    let mut counted: Vec<Vec<Option<f64>>> = vec![Vec::new(); gpus.len()];
    let mut power: Vec<Vec<(f64, f64)>> = vec![Vec::new(); gpus.len()];
    let mut rapl_joules: Vec<Vec<f64>> = vec![Vec::new(); rapl_start.len()];
    loop {
        let t = t0.elapsed().as_secs_f64();
        if let Some(n) = &nvml {
            for (i, g) in gpus.iter().enumerate() {
                let now = n.energy_mj(g);
                counted[i].push(match (counters_start[i], now) {
                    (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e3),
                    _ => None,
                });
                // Power is still sampled where a counter works: a domain whose counter drops
                // out mid-interval falls back to it.
                power[i].push((t, n.power_watts(g).unwrap_or(f64::NAN)));
            }
        }
        if let Some(r) = &rapl {
            for ((series, start), end) in rapl_joules.iter_mut().zip(&rapl_start).zip(r.read()) {
                series.push(
                    counter_delta(start.microjoules, end.microjoules, start.max) as f64 / 1e6,
                );
            }
        }
        ticks.push(t);
        if stop.load(Ordering::Acquire) {
            break;
        }
        // Unparked early by `stop`; a spurious wake-up only adds a sample.
        std::thread::park_timeout(period);
    }
    let mut domains = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let name = format!("gpu{i} {name}");
        // The driver's own energy counter (Volta and later) is finer than 45 ms samples.
        if counted[i].iter().all(Option::is_some) {
            let joules = counted[i].iter().flatten().copied().collect();
            domains.push(Series { name, method: "nvml-counter", joules });
        } else if power[i].iter().filter(|(_, w)| w.is_finite()).count() >= 2 {
            let joules = running_integral(&power[i]);
            domains.push(Series { name, method: "nvml-power-samples", joules });
        } else {
            unavailable.push(format!("{name}: no power reading"));
        }
    }
    for (start, joules) in rapl_start.iter().zip(rapl_joules) {
        domains.push(Series { name: start.name.clone(), method: "rapl", joules });
    }
    Recording { t0, ticks, domains, unavailable }
}

mod rapl {
    //! Intel RAPL package counters under /sys/class/powercap (often readable by root only).
    use std::path::PathBuf;

    #[derive(Debug, Clone)]
    pub struct Counter {
        pub name: String,
        pub microjoules: u64,
        pub max: u64,
    }

    pub struct Rapl {
        zones: Vec<PathBuf>,
    }

    impl Rapl {
        pub fn open() -> Result<Rapl, String> {
            let dir = std::fs::read_dir("/sys/class/powercap")
                .map_err(|e| format!("/sys/class/powercap: {e}"))?;
            let mut zones: Vec<PathBuf> = dir
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n =
                        p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
                    // Top-level package zones only (intel-rapl:0), not their sub-zones (intel-rapl:0:0).
                    n.starts_with("intel-rapl:") && n.matches(':').count() == 1
                })
                .collect();
            zones.sort();
            zones.retain(|z| std::fs::read_to_string(z.join("energy_uj")).is_ok());
            if zones.is_empty() {
                return Err("no readable intel-rapl package zone".into());
            }
            Ok(Rapl { zones })
        }

        pub fn read(&self) -> Vec<Counter> {
            let num = |p: PathBuf| {
                std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok())
            };
            self.zones
                .iter()
                .map(|z| Counter {
                    name: std::fs::read_to_string(z.join("name"))
                        .map(|s| s.trim().to_string())
                        .unwrap_or_else(|_| z.display().to_string()),
                    microjoules: num(z.join("energy_uj")).unwrap_or(0),
                    max: num(z.join("max_energy_range_uj")).unwrap_or(u64::MAX),
                })
                .collect()
        }
    }
}

mod nvml {
    //! The few NVML readings needed, through `nvml-wrapper`: it loads `libnvidia-ml.so.1` at
    //! run time, so nothing links against the driver and machines without one still run.
    use nvml_wrapper::Device;

    pub struct Nvml(nvml_wrapper::Nvml);

    /// An NVML device handle; valid while the `Nvml` that gave it lives.
    pub struct Gpu<'a>(Device<'a>);

    impl Nvml {
        pub fn open() -> Result<Nvml, String> {
            nvml_wrapper::Nvml::init().map(Nvml).map_err(|e| e.to_string())
        }

        pub fn devices(&self) -> Vec<Gpu<'_>> {
            let count = self.0.device_count().unwrap_or(0);
            (0..count).filter_map(|i| self.0.device_by_index(i).ok().map(Gpu)).collect()
        }

        pub fn power_watts(&self, g: &Gpu) -> Option<f64> {
            g.0.power_usage().ok().map(|mw| mw as f64 / 1e3)
        }

        pub fn energy_mj(&self, g: &Gpu) -> Option<u64> {
            g.0.total_energy_consumption().ok()
        }

        pub fn name(&self, g: &Gpu) -> String {
            g.0.name().unwrap_or_else(|_| "unknown GPU".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trapezoid_integral() {
        // 100 W for 1 s, then a ramp to 200 W over 1 s: 100 + 150 J.
        assert!((integrate(&[(0.0, 100.0), (1.0, 100.0), (2.0, 200.0)]) - 250.0).abs() < 1e-9);
        assert_eq!(integrate(&[(0.0, 5.0)]), 0.0);
    }

    #[test]
    fn a_window_reads_the_cumulative_energy_between_ticks() {
        // Ticks at 0, 1, 2 s with 0, 100, 300 J so far: 100 W, then 200 W.
        let (ticks, joules) = ([0.0, 1.0, 2.0], [0.0, 100.0, 300.0]);
        assert_eq!(cumulative_at(&ticks, &joules, 0.5), 50.0);
        assert_eq!(cumulative_at(&ticks, &joules, 1.5), 200.0);
        // Outside the span: clamped.
        assert_eq!(cumulative_at(&ticks, &joules, -1.0), 0.0);
        assert_eq!(cumulative_at(&ticks, &joules, 9.0), 300.0);
        let recording = |ticks: &[f64], joules: &[f64]| Recording {
            t0: Instant::now(),
            ticks: ticks.to_vec(),
            domains: vec![Series {
                name: "gpu0".into(),
                method: "nvml-counter",
                joules: joules.to_vec(),
            }],
            unavailable: Vec::new(),
        };
        // The window 0.5..1.5 s holds 150 J; the whole interval 300 J over 2 s.
        let r = recording(&ticks, &joules).reading(0.5, 1.5);
        assert_eq!((r.seconds, r.joules(), r.samples), (1.0, Some(150.0), 1));
        let whole = recording(&ticks, &joules).whole();
        assert_eq!((whole.seconds, whole.joules()), (2.0, Some(300.0)));
    }

    #[test]
    fn running_integral_skips_unreadable_samples() {
        // 100 W, a sample the driver did not answer, then 200 W: 100 J, 100 J, 100 + 300 J.
        let samples = [(0.0, 100.0), (1.0, 100.0), (2.0, f64::NAN), (3.0, 200.0)];
        assert_eq!(running_integral(&samples), vec![0.0, 100.0, 100.0, 400.0]);
        assert_eq!(
            *running_integral(&samples).last().unwrap(),
            integrate(&[(0.0, 100.0), (1.0, 100.0), (3.0, 200.0)])
        );
    }

    #[test]
    fn wrapping_counter() {
        assert_eq!(counter_delta(10, 25, 100), 15);
        assert_eq!(counter_delta(90, 5, 100), 15);
    }

    #[test]
    fn stop_ends_the_interval_without_waiting_a_period() {
        let s = Sampler::start(Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
        let t = Instant::now();
        let r = s.stop();
        assert!(t.elapsed() < Duration::from_secs(1), "stop waited {:?}", t.elapsed());
        assert!(r.seconds >= 0.02 && r.seconds < 1.0, "{r:?}");
    }

    #[test]
    fn sampler_degrades_gracefully_without_sources() {
        let s = Sampler::start(Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(30));
        let r = s.stop();
        assert!(r.seconds >= 0.03 && r.samples >= 2, "{r:?}");
        // On a machine with neither NVML nor readable RAPL, every source says why.
        if r.domains.is_empty() {
            assert_eq!(r.joules(), None);
            assert!(r.unavailable.len() >= 2, "{r:?}");
        }
    }
}
