//! Energy of a device set relative to its best device alone: which power domains of an
//! [`EnergyReading`] belong to a set of devices, and the energy and energy-delay ratios of a
//! co-executed run over the fastest device of the set run alone, summed over the same domains.
//!
//! Domains: the NVML domain of every NVIDIA GPU of the set, plus every RAPL domain, always,
//! because the host CPU runs in every run (it drives the GPUs' queues even when it computes
//! nothing), so its energy belongs to both sides of the ratio. Both runs are summed over the
//! same domains, so a GPU of the set that idles during the alone run counts there too.
//!
//! Mapping an OpenCL device to its NVML domain: the `k`-th NVIDIA device of the unified device
//! list (counting in list order) is NVML index `k` (domain `gpu<k> <name>`). NVIDIA's OpenCL
//! enumerates GPUs in CUDA order, which for identical GPUs (equal speed, so the PCI bus order
//! breaks the tie) is NVML's PCI bus order; the NVML name must equal the OpenCL name, otherwise
//! no ratio is given (mixed GPU models could be ordered differently).

use crate::harness::energy::EnergyReading;
use hetdsl::balance::DeviceKind;
use hetdsl::DeviceInfo;

/// How [`EnergyReading`] names the RAPL domains (`package-0`, …).
const RAPL_METHOD: &str = "rapl";

/// Whether `d` is driven by NVIDIA's OpenCL, so that NVML sees it.
fn is_nvidia(d: &DeviceInfo) -> bool {
    d.nvidia.is_some() || d.platform.contains("NVIDIA")
}

/// The names of the domains of `reading` that belong to the devices `set` (positions in
/// `devices`, the unified list): each NVIDIA GPU's NVML domain and every RAPL domain. `Err`
/// says why the set's energy cannot be read whole.
pub fn set_domains(
    reading: &EnergyReading,
    devices: &[DeviceInfo],
    set: &[usize],
) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for &p in set {
        let d = devices.get(p).ok_or_else(|| format!("device {p} is not in the list"))?;
        if d.kind == DeviceKind::Cpu {
            continue; // Counted through RAPL below.
        }
        if !is_nvidia(d) {
            return Err(format!("device {p} ({}) has no energy source", d.name));
        }
        let nvml = devices[..p].iter().filter(|e| is_nvidia(e)).count();
        let prefix = format!("gpu{nvml} ");
        let domain = reading
            .domains
            .iter()
            .find(|e| e.name.starts_with(&prefix))
            .ok_or_else(|| format!("device {p} ({}): no NVML reading gpu{nvml}", d.name))?;
        if domain.name[prefix.len()..] != d.name {
            return Err(format!(
                "device {p} is `{}` but NVML gpu{nvml} is `{}`: cannot map them",
                d.name,
                &domain.name[prefix.len()..]
            ));
        }
        names.push(domain.name.clone());
    }
    let rapl: Vec<String> = reading
        .domains
        .iter()
        .filter(|e| e.method == RAPL_METHOD)
        .map(|e| e.name.clone())
        .collect();
    let has_cpu = set.iter().any(|&p| devices[p].kind == DeviceKind::Cpu);
    if rapl.is_empty() && has_cpu {
        return Err("the set computes on the CPU but no CPU energy (RAPL) is readable".into());
    }
    names.extend(rapl);
    if names.is_empty() {
        return Err("no energy domain readable".into());
    }
    Ok(names)
}

/// Joules of `reading` summed over the domains `names`; `None` if one is missing.
pub fn joules_over(reading: &EnergyReading, names: &[String]) -> Option<f64> {
    names.iter().map(|n| reading.domains.iter().find(|d| &d.name == n).map(|d| d.joules)).sum()
}

/// A co-executed run's energy against the set's best device alone.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EnergyRatios {
    /// E_coexec / E_best_alone over `domains`.
    pub energy_ratio: Option<f64>,
    /// (E·t)_coexec / (E·t)_best_alone, t being each reading's interval (the whole run call,
    /// over which the energy was measured, not only the ROI).
    pub edp_ratio: Option<f64>,
    /// The domains summed on both sides.
    pub domains: Vec<String>,
    /// Why a ratio is missing, or what it leaves out.
    pub notes: Vec<String>,
}

/// Compare `coexec` (a run of the devices `set`) with `best_alone` (the fastest device of the
/// set alone) over the set's domains. Missing readings give `None` ratios and say why.
pub fn compare(
    coexec: Option<&EnergyReading>,
    best_alone: Option<&EnergyReading>,
    devices: &[DeviceInfo],
    set: &[usize],
) -> EnergyRatios {
    let mut out = EnergyRatios {
        energy_ratio: None,
        edp_ratio: None,
        domains: Vec::new(),
        notes: Vec::new(),
    };
    let (Some(c), Some(a)) = (coexec, best_alone) else {
        out.notes
            .push("no energy reading (energy off, or no device of the set timed alone)".into());
        return out;
    };
    let domains = match set_domains(c, devices, set) {
        Ok(d) => d,
        Err(e) => {
            out.notes.push(e);
            out.notes.extend(c.unavailable.iter().cloned());
            return out;
        }
    };
    if !domains.iter().any(|n| c.domains.iter().any(|d| &d.name == n && d.method == RAPL_METHOD)) {
        out.notes.push("CPU energy (RAPL) unreadable: GPU energy only".into());
    }
    match (joules_over(c, &domains), joules_over(a, &domains)) {
        (Some(ec), Some(ea)) if ea > 0.0 && a.seconds > 0.0 => {
            out.energy_ratio = Some(ec / ea);
            out.edp_ratio = Some(ec * c.seconds / (ea * a.seconds));
        }
        (Some(_), Some(_)) => out.notes.push("the alone run measured no energy".into()),
        _ => out.notes.push("the alone run lacks a domain of the co-executed one".into()),
    }
    out.domains = domains;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::energy::DomainEnergy;

    fn reading(seconds: f64, domains: &[(&str, f64, &str)]) -> EnergyReading {
        EnergyReading {
            seconds,
            samples: 10,
            domains: domains
                .iter()
                .map(|&(name, joules, method)| DomainEnergy {
                    name: name.into(),
                    joules,
                    method: method.into(),
                })
                .collect(),
            unavailable: Vec::new(),
        }
    }

    /// CPU at 0, three H200s at 1..=3 (NVML gpu0..gpu2).
    fn machine() -> Vec<DeviceInfo> {
        let mut list = vec![DeviceInfo::example_cpu(0, 16)];
        for i in 1..=3 {
            list.push(DeviceInfo::example_nvidia(i, "NVIDIA H200", (9, 0), 132, 1980));
        }
        list
    }

    #[test]
    fn set_domains_map_opencl_gpus_to_nvml_by_order_plus_rapl() {
        let r = reading(
            1.0,
            &[
                ("gpu0 NVIDIA H200", 1.0, "nvml-counter"),
                ("gpu1 NVIDIA H200", 1.0, "nvml-counter"),
                ("gpu2 NVIDIA H200", 1.0, "nvml-counter"),
                ("package-0", 1.0, "rapl"),
                ("package-1", 1.0, "rapl"),
            ],
        );
        let m = machine();
        assert_eq!(
            set_domains(&r, &m, &[3, 0]),
            Ok(vec!["gpu2 NVIDIA H200".into(), "package-0".into(), "package-1".into()])
        );
        assert_eq!(
            set_domains(&r, &m, &[1, 2]),
            Ok(vec![
                "gpu0 NVIDIA H200".into(),
                "gpu1 NVIDIA H200".into(),
                "package-0".into(),
                "package-1".into()
            ])
        );
        // A GPU whose NVML name differs cannot be mapped by order.
        let mut other = machine();
        other[2].name = "NVIDIA A100".into();
        assert!(set_domains(&r, &other, &[2]).is_err());
        // Without RAPL, a set computing on the CPU has no whole energy; a GPU-only set has.
        let gpus_only = reading(1.0, &[("gpu0 NVIDIA H200", 1.0, "nvml-counter")]);
        assert!(set_domains(&gpus_only, &m, &[0, 1]).is_err());
        assert_eq!(set_domains(&gpus_only, &m, &[1]), Ok(vec!["gpu0 NVIDIA H200".into()]));
        assert!(set_domains(&gpus_only, &m, &[2]).is_err());
    }

    #[test]
    fn ratios_sum_the_same_domains_on_both_sides() {
        let m = machine();
        // Co-executed on GPUs 1 and 2 for 0.5 s; GPU 3 (not in the set) must not count.
        let coexec = reading(
            0.5,
            &[
                ("gpu0 NVIDIA H200", 200.0, "nvml-counter"),
                ("gpu1 NVIDIA H200", 180.0, "nvml-counter"),
                ("gpu2 NVIDIA H200", 999.0, "nvml-counter"),
                ("package-0", 60.0, "rapl"),
            ],
        );
        // GPU 1 alone for 1 s; GPU 2 idles at 70 J, still counted.
        let alone = reading(
            1.0,
            &[
                ("gpu0 NVIDIA H200", 400.0, "nvml-counter"),
                ("gpu1 NVIDIA H200", 70.0, "nvml-counter"),
                ("gpu2 NVIDIA H200", 1.0, "nvml-counter"),
                ("package-0", 130.0, "rapl"),
            ],
        );
        let r = compare(Some(&coexec), Some(&alone), &m, &[1, 2]);
        let e = 440.0 / 600.0;
        assert!((r.energy_ratio.unwrap_or(f64::NAN) - e).abs() < 1e-12, "{r:?}");
        assert!((r.edp_ratio.unwrap_or(f64::NAN) - e * 0.5).abs() < 1e-12, "{r:?}");
        assert_eq!(r.domains.len(), 3);
        assert!(r.notes.is_empty(), "{r:?}");
    }

    #[test]
    fn missing_readings_give_no_ratio_and_say_why() {
        let m = machine();
        let nothing = EnergyReading {
            seconds: 1.0,
            samples: 3,
            domains: Vec::new(),
            unavailable: vec!["NVML: libnvidia-ml.so.1 not found".into()],
        };
        let r = compare(Some(&nothing), Some(&nothing), &m, &[0, 1]);
        assert_eq!((r.energy_ratio, r.edp_ratio), (None, None));
        assert!(r.notes.iter().any(|n| n.contains("NVML")), "{r:?}");
        let r = compare(None, Some(&nothing), &m, &[1]);
        assert_eq!(r.energy_ratio, None);
        assert!(!r.notes.is_empty());
        // The alone run lacks the co-executed run's GPU domain.
        let c = reading(1.0, &[("gpu0 NVIDIA H200", 5.0, "nvml-counter")]);
        let a = reading(1.0, &[("gpu1 NVIDIA H200", 5.0, "nvml-counter")]);
        let r = compare(Some(&c), Some(&a), &m, &[1]);
        assert_eq!(r.energy_ratio, None);
        assert!(r.notes.iter().any(|n| n.contains("lacks")), "{r:?}");
    }
}
