//! Hand-written SVG plots of a run, in the manner of the Sigmoid paper's Figs. 1–3: for every
//! device, the computing speed (work-groups per second) and the package size (work-groups) of each
//! of its packages over the run's time line. Each package is a horizontal segment spanning the time
//! it was out (handed out → completion seen); segments of one device are joined into a step line.

use hetdsl::Report;
use std::fmt::Write as _;

const WIDTH: f64 = 960.0;
const PANEL_HEIGHT: f64 = 260.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 90.0;
const GAP: f64 = 70.0;
const COLOURS: [&str; 8] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

/// Round, readable tick positions covering [0, max]: steps of 1, 2 or 5 × 10^k.
fn ticks(max: f64) -> Vec<f64> {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return vec![0.0];
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step =
        [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(raw);
    (0..).map(|k| k as f64 * step).take_while(|t| *t <= max * 1.0001).collect()
}

/// A compact number for axis labels (12, 1.5k, 3.2M).
fn short(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let a = v.abs();
    if a >= 1e9 {
        trim(format!("{:.3}", v / 1e9)) + "G"
    } else if a >= 1e6 {
        trim(format!("{:.3}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.3}", v / 1e3)) + "k"
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.3}"))
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One package's point on the plots: (device, start s, end s, groups, groups per second).
struct Segment {
    device: usize,
    start: f64,
    end: f64,
    groups: f64,
    speed: f64,
}

fn segments(report: &Report) -> Vec<Segment> {
    let mut out: Vec<Segment> = report
        .trace
        .iter()
        .map(|p| {
            let span = (p.host_end - p.host_start).max(1e-9);
            // Device kernel time when profiled (the device's own speed), else the host span.
            let busy = p.kernel_seconds.filter(|t| *t > 0.0).unwrap_or(span);
            Segment {
                device: p.device,
                start: p.host_start,
                end: p.host_end,
                groups: p.package.len as f64,
                speed: p.package.len as f64 / busy,
            }
        })
        .collect();
    out.sort_by(|a, b| a.device.cmp(&b.device).then(a.start.total_cmp(&b.start)));
    out
}

/// One panel: axes, grid, a step line per device of `value(segment)`.
fn panel(
    svg: &mut String,
    top: f64,
    title: &str,
    unit: &str,
    segs: &[Segment],
    t_max: f64,
    value: impl Fn(&Segment) -> f64,
) {
    let plot_w = WIDTH - LEFT - RIGHT;
    // The axis covers every package that was out for at least 1 % of the run; a blip above it
    // (a tiny probe package timed at an absurd speed) is drawn clipped at the top, so that it
    // does not flatten everything else.
    let all_max = segs.iter().map(&value).fold(0.0, f64::max);
    let lasting_max =
        segs.iter().filter(|s| s.end - s.start >= 0.01 * t_max).map(&value).fold(0.0, f64::max);
    let v_max = if lasting_max > 0.0 { lasting_max } else { all_max } * 1.08;
    let clipped = segs.iter().any(|s| value(s) > v_max);
    let x = |t: f64| LEFT + t / t_max * plot_w;
    let y = |v: f64| {
        top + PANEL_HEIGHT - if v_max > 0.0 { v.min(v_max) / v_max * PANEL_HEIGHT } else { 0.0 }
    };
    let title = if clipped {
        format!("{title} (short packages above the axis clipped)")
    } else {
        title.to_string()
    };

    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="{}" font-size="15" font-weight="bold">{}</text>"#,
        top - 10.0,
        escape(&title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{PANEL_HEIGHT}" fill="none" stroke="#444"/>"##
    );
    for t in ticks(v_max) {
        let yy = y(t);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/>"##,
            LEFT + plot_w
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            yy + 4.0,
            short(t)
        );
    }
    for t in ticks(t_max * 1e3) {
        let xx = x(t / 1e3);
        let _ = writeln!(
            svg,
            r##"<line x1="{xx:.1}" y1="{top}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/>"##,
            top + PANEL_HEIGHT
        );
        let _ = writeln!(
            svg,
            r#"<text x="{xx:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            top + PANEL_HEIGHT + 16.0,
            short(t)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">time since the run began (ms)</text>"#,
        LEFT + plot_w / 2.0,
        top + PANEL_HEIGHT + 34.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="20" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 20 {:.1})">{}</text>"#,
        top + PANEL_HEIGHT / 2.0,
        top + PANEL_HEIGHT / 2.0,
        escape(unit)
    );

    let mut start = 0;
    while start < segs.len() {
        let device = segs[start].device;
        let end =
            segs[start..].iter().position(|s| s.device != device).map_or(segs.len(), |k| start + k);
        let colour = COLOURS[device % COLOURS.len()];
        let mut points = String::new();
        for s in &segs[start..end] {
            let _ = write!(
                points,
                "{:.1},{:.1} {:.1},{:.1} ",
                x(s.start),
                y(value(s)),
                x(s.end),
                y(value(s))
            );
        }
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="1" stroke-opacity="0.5"/>"#,
            points.trim_end()
        );
        for s in &segs[start..end] {
            let _ = writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"/>"#,
                x(s.start),
                y(value(s)),
                x(s.end).max(x(s.start) + 1.5),
                y(value(s))
            );
        }
        start = end;
    }
}

/// The SVG document for one run; `label` names the problem in the title (e.g. the sample).
pub fn run_plot(label: &str, report: &Report) -> String {
    let segs = segments(report);
    let t_max = segs.iter().map(|s| s.end).fold(report.roi_seconds, f64::max).max(1e-6);
    let height = TOP + 2.0 * PANEL_HEIGHT + GAP + 110.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let packages: Vec<String> = report.devices.iter().map(|d| d.packages.to_string()).collect();
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="26" font-size="18" font-weight="bold">{} ({}) — {}</text>
<text x="{LEFT}" y="48" font-size="14">ROI {:.2} ms, balance {:.3}, packages {}</text>"#,
        escape(label),
        escape(&report.kernel),
        escape(&report.balancer),
        report.roi_seconds * 1e3,
        report.balance,
        packages.join(" + ")
    );
    panel(
        &mut svg,
        TOP,
        "Computing speed per package",
        "work-groups per second",
        &segs,
        t_max,
        |s| s.speed,
    );
    panel(&mut svg, TOP + PANEL_HEIGHT + GAP, "Package size", "work-groups", &segs, t_max, |s| {
        s.groups
    });
    // Legend, one line per device.
    let legend_top = TOP + 2.0 * PANEL_HEIGHT + GAP + 58.0;
    for (k, d) in report.devices.iter().enumerate() {
        let yy = legend_top + 18.0 * k as f64;
        let colour = COLOURS[k % COLOURS.len()];
        let _ = writeln!(
            svg,
            r#"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"/>"#,
            yy - 4.0,
            LEFT + 24.0,
            yy - 4.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{yy:.1}" font-size="12">device {}: {} ({} packages, {} work-groups, finished at {:.2} ms)</text>"#,
            LEFT + 32.0,
            d.index,
            escape(&d.name),
            d.packages,
            d.groups,
            d.finish_seconds * 1e3
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0), vec![0.0]);
        let t = ticks(123.0);
        assert_eq!(t[1], 50.0);
        assert!(*t.last().unwrap() <= 123.0 && *t.last().unwrap() + 50.0 > 123.0);
    }

    #[test]
    fn plot_has_one_line_per_device_and_a_segment_per_package() {
        use hetdsl::balance::{DeviceKind, Package};
        use hetdsl::report::{DeviceReport, PackageTrace, Transfer};
        let device = |index: usize, packages: usize| DeviceReport {
            index,
            name: format!("dev<{index}>"),
            kind: DeviceKind::Cpu,
            packages,
            groups: 10,
            busy_seconds: 0.01,
            finish_seconds: 0.02,
            fault: None,
        };
        let package = |device: usize, offset: u64, start: f64| PackageTrace {
            device,
            package: Package { offset, len: 5 },
            host_start: start,
            host_end: start + 0.01,
            kernel_seconds: Some(0.005),
            written: Transfer::default(),
            read: Transfer::default(),
            merged: true,
        };
        let report = Report {
            kernel: "k".into(),
            balancer: "b".into(),
            first_group: 0,
            total_groups: 20,
            devices: vec![device(0, 2), device(1, 2)],
            trace: vec![
                package(0, 0, 0.0),
                package(1, 5, 0.0),
                package(0, 10, 0.01),
                package(1, 15, 0.01),
            ],
            roi_seconds: 0.02,
            roi_start: None,
            binary_seconds: 0.03,
            balance: 1.0,
            speedup: None,
            smax: None,
            efficiency: None,
            backups: Vec::new(),
            transfers: Vec::new(),
            faults: vec![],
        };
        let svg = run_plot("sample", &report);
        // Two panels × two devices: four step lines; two panels × four packages: eight bars.
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(svg.matches("stroke-width=\"3\"").count(), 8 + 2);
        assert!(svg.contains("dev&lt;1&gt;"), "names are escaped");
        // Speed: 5 groups in 5 ms of kernel time = 1000 groups/s, inside the axis range.
        assert!(svg.contains(">1000<") || svg.contains(">1k<") || svg.contains(">800<"));
    }

    #[test]
    fn a_blip_is_clipped_instead_of_flattening_the_axis() {
        let long = Segment { device: 0, start: 0.0, end: 1.0, groups: 100.0, speed: 1000.0 };
        let blip = Segment { device: 1, start: 1.0, end: 1.001, groups: 1.0, speed: 1e6 };
        let mut svg = String::new();
        panel(&mut svg, 0.0, "speed", "groups/s", &[long, blip], 1.001, |s| s.speed);
        assert!(svg.contains("clipped"));
        assert!(svg.contains(">1000<"), "the axis reaches the lasting package's speed");
        assert!(!svg.contains(">1M<") && !svg.contains(">800k<"), "but not the blip's");
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1500.0), "1500");
        assert_eq!(short(25_000.0), "25k");
        assert_eq!(short(3_200_000.0), "3.2M");
        assert_eq!(short(0.25), "0.25");
    }
}
