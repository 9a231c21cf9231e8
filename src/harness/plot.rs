//! Plots of a run with plotters, in the manner of the Sigmoid paper's Figs. 1–3: for every
//! device, the computing speed (work-groups per second) and the package size (work-groups) of
//! each of its packages over the run's time line. Each package is a thick horizontal segment
//! spanning the time it was out; a device's segments are joined by a thin step line. The same
//! drawing goes to SVG or, through an in-memory bitmap and the `png` crate, to PNG; measured
//! runs ([`RunPlot::of_report`]) and simulated ones ([`RunPlot::of_sim`]) alike.

use std::sync::OnceLock;

use hetdsl::sim::SimResult;
use hetdsl::Report;
use plotters::coord::Shift;
use plotters::prelude::*;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 760;
const COLOURS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];
/// Where a TrueType font is looked for (plotters lays out and draws text with one), after
/// `HETDSL_PLOT_FONT`: the usual Debian, Fedora and Arch places.
const FONT_PATHS: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
];

/// One package's mark on the plots.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub device: usize,
    /// Seconds since the run began.
    pub start: f64,
    pub end: f64,
    pub groups: f64,
    /// Work-groups per second.
    pub speed: f64,
}

/// What one plot shows: a title, a line of figures, one legend line per device, the packages.
#[derive(Debug, Clone)]
pub struct RunPlot {
    pub title: String,
    pub subtitle: String,
    /// `(device, legend text)`.
    pub devices: Vec<(usize, String)>,
    pub segments: Vec<Segment>,
    /// The run's length in seconds (at least the last package's end is shown).
    pub seconds: f64,
}

impl RunPlot {
    /// A measured run; `label` names the problem in the title (e.g. the sample).
    pub fn of_report(label: &str, report: &Report) -> RunPlot {
        let segments = report
            .trace
            .iter()
            .map(|p| {
                let span = (p.host_end - p.host_start).max(1e-9);
                // Device kernel time when profiled (the device's own speed), else the host span.
                let busy = p.kernel_seconds.filter(|t| *t > 0.0).unwrap_or(span);
                let groups = p.package.len as f64;
                Segment {
                    device: p.device,
                    start: p.host_start,
                    end: p.host_end,
                    groups,
                    speed: groups / busy,
                }
            })
            .collect();
        let packages: Vec<String> = report.devices.iter().map(|d| d.packages.to_string()).collect();
        RunPlot {
            title: format!("{label} ({}) — {}", report.kernel, report.balancer),
            subtitle: format!(
                "ROI {:.2} ms, balance {:.3}, packages {}",
                report.roi_seconds * 1e3,
                report.balance,
                packages.join(" + ")
            ),
            devices: report
                .devices
                .iter()
                .map(|d| {
                    let text = format!(
                        "device {}: {} ({} packages, {} work-groups, finished at {:.2} ms)",
                        d.index,
                        d.name,
                        d.packages,
                        d.groups,
                        d.finish_seconds * 1e3
                    );
                    (d.index, text)
                })
                .collect(),
            segments,
            seconds: report.roi_seconds,
        }
    }

    /// A simulated run of `kernel` on `machine`; aborted copies are left out (their work-groups
    /// are in a later package).
    pub fn of_sim(machine: &str, kernel: &str, r: &SimResult) -> RunPlot {
        let segments = r
            .packages
            .iter()
            .filter(|p| !p.aborted)
            .map(|p| {
                let groups = p.package.len as f64;
                let speed = groups / (p.end - p.start).max(1e-12);
                Segment { device: p.device, start: p.start, end: p.end, groups, speed }
            })
            .collect();
        RunPlot {
            title: format!("{kernel} on {machine} (simulated) — {}", r.balancer),
            subtitle: format!(
                "makespan {:.2} ms, balance {:.3}, efficiency {:.3}, packages {}",
                r.makespan * 1e3,
                r.balance,
                r.efficiency,
                r.device_packages.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" + ")
            ),
            devices: (0..r.device_packages.len())
                .map(|d| {
                    let text = format!(
                        "device {d}: {} packages, finished at {:.2} ms",
                        r.device_packages[d],
                        r.finish.get(d).copied().unwrap_or(0.0) * 1e3
                    );
                    (d, text)
                })
                .collect(),
            segments,
            seconds: r.makespan,
        }
    }

    /// The plot as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        font()?;
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    /// The plot as PNG file bytes.
    pub fn png(&self) -> Result<Vec<u8>, String> {
        font()?;
        let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())?;
        }
        crate::harness::png::encode(WIDTH as usize, HEIGHT as usize, 3, &rgb)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let (head, rest) = root.split_vertically(70);
        let legend_height = 14 + 18 * self.devices.len() as u32;
        let (panels, legend) = rest.split_vertically(HEIGHT - 70 - legend_height);
        head.draw(&Text::new(self.title.clone(), (20, 12), ("sans-serif", 20).into_font()))
            .map_err(err)?;
        head.draw(&Text::new(self.subtitle.clone(), (20, 42), ("sans-serif", 15).into_font()))
            .map_err(err)?;
        let halves = panels.split_evenly((2, 1));
        let t_max = self.segments.iter().map(|s| s.end).fold(self.seconds, f64::max).max(1e-6);
        let speed = ("Computing speed per package", "work-groups per second");
        panel(&halves[0], speed, &self.segments, t_max, |s| s.speed)?;
        panel(&halves[1], ("Package size", "work-groups"), &self.segments, t_max, |s| s.groups)?;
        for (k, (device, text)) in self.devices.iter().enumerate() {
            let y = 8 + 18 * k as i32;
            let colour = COLOURS[device % COLOURS.len()];
            legend
                .draw(&PathElement::new(vec![(60, y + 8), (84, y + 8)], colour.stroke_width(3)))
                .map_err(err)?;
            legend
                .draw(&Text::new(text.clone(), (92, y), ("sans-serif", 13).into_font()))
                .map_err(err)?;
        }
        Ok(())
    }
}

/// The axis top for `value`: it covers every package that was out for at least 1 % of the run;
/// a blip above it (a tiny probe package timed at an absurd speed) is drawn clipped at the top,
/// so that it does not flatten everything else. Returns the top and whether anything is clipped.
pub fn axis_top(segs: &[Segment], t_max: f64, value: impl Fn(&Segment) -> f64) -> (f64, bool) {
    let all_max = segs.iter().map(&value).fold(0.0, f64::max);
    let lasting_max =
        segs.iter().filter(|s| s.end - s.start >= 0.01 * t_max).map(&value).fold(0.0, f64::max);
    let top = if lasting_max > 0.0 { lasting_max } else { all_max } * 1.08;
    let top = if top > 0.0 { top } else { 1.0 };
    (top, segs.iter().any(|s| value(s) > top))
}

/// One panel: axes, grid, a step line and a thick segment per package for every device.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (title, unit): (&str, &str),
    segs: &[Segment],
    t_max: f64,
    value: impl Fn(&Segment) -> f64,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let (top, clipped) = axis_top(segs, t_max, &value);
    let caption = match clipped {
        true => format!("{title} (short packages above the axis clipped)"),
        false => title.to_string(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..t_max * 1e3, 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time since the run began (ms)")
        .y_desc(unit)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(err)?;
    let mut devices: Vec<usize> = segs.iter().map(|s| s.device).collect();
    devices.sort_unstable();
    devices.dedup();
    for device in devices {
        let colour = COLOURS[device % COLOURS.len()];
        let mut mine: Vec<&Segment> = segs.iter().filter(|s| s.device == device).collect();
        mine.sort_by(|a, b| a.start.total_cmp(&b.start));
        let at = |s: &Segment| value(s).min(top);
        let steps = mine.iter().flat_map(|s| [(s.start * 1e3, at(s)), (s.end * 1e3, at(s))]);
        chart.draw_series(LineSeries::new(steps, colour.mix(0.5).stroke_width(1))).map_err(err)?;
        // At least a visible dash for a package too short to span a pixel.
        let min_ms = t_max * 1e3 / 600.0;
        chart
            .draw_series(mine.iter().map(|s| {
                let end = (s.end * 1e3).max(s.start * 1e3 + min_ms);
                PathElement::new(vec![(s.start * 1e3, at(s)), (end, at(s))], colour.stroke_width(3))
            }))
            .map_err(err)?;
    }
    Ok(())
}

/// Registers a TrueType font for plotters once per process: `HETDSL_PLOT_FONT`, else the first
/// of [`FONT_PATHS`] that exists. Without one no plot can be drawn (plotters measures text with
/// it), which is an error that says what to install.
fn font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let from_env = std::env::var("HETDSL_PLOT_FONT").ok();
        let bytes = find_font(from_env.iter().map(String::as_str).chain(FONT_PATHS))?;
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| "the plot font could not be registered".to_string())
    })
    .clone()
}

/// The first of `candidates` that is a readable TrueType font, kept for the whole process
/// (plotters holds registered fonts in a static).
fn find_font<'a>(candidates: impl IntoIterator<Item = &'a str>) -> Result<&'static [u8], String> {
    for path in candidates {
        let Ok(bytes) = std::fs::read(path) else { continue };
        // The TrueType and OpenType signatures: a file that is neither is passed over.
        if [&b"\0\x01\0\0"[..], b"OTTO", b"true"].iter().any(|m| bytes.starts_with(m)) {
            return Ok(Box::leak(bytes.into_boxed_slice()));
        }
    }
    Err("no TrueType font found for the plots: install fonts-dejavu-core or set \
         HETDSL_PLOT_FONT to a .ttf file"
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(device: usize, start: f64, end: f64, groups: f64, speed: f64) -> Segment {
        Segment { device, start, end, groups, speed }
    }

    fn two_devices() -> RunPlot {
        RunPlot {
            title: "sample (k) — b".into(),
            subtitle: "ROI 20 ms".into(),
            devices: vec![(0, "device 0: dev<0>".into()), (1, "device 1: dev<1>".into())],
            segments: vec![
                segment(0, 0.0, 0.01, 5.0, 1000.0),
                segment(1, 0.0, 0.01, 5.0, 500.0),
                segment(0, 0.01, 0.02, 5.0, 1000.0),
                segment(1, 0.01, 0.02, 5.0, 500.0),
            ],
            seconds: 0.02,
        }
    }

    #[test]
    fn svg_has_a_mark_per_package_and_escaped_names() {
        let svg = two_devices().svg().unwrap_or_else(|e| panic!("{e}"));
        // Two panels × four packages, each a thick segment; plus two legend marks.
        assert_eq!(svg.matches("stroke-width=\"3\"").count(), 8 + 2, "{svg}");
        assert!(svg.contains("dev&lt;1&gt;"), "names are escaped");
        assert!(svg.contains("work-groups per second") && svg.contains("Package size"));
    }

    #[test]
    fn png_decodes_to_the_plot_size_and_is_not_blank() {
        let bytes = two_devices().png().unwrap_or_else(|e| panic!("{e}"));
        let mut reader =
            png::Decoder::new(std::io::Cursor::new(bytes)).read_info().expect("decodes");
        let mut buf = vec![0; reader.output_buffer_size().unwrap_or(0)];
        let info = reader.next_frame(&mut buf).expect("one frame");
        assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
        // Device 0's colour is drawn somewhere (its thick segments).
        let c = COLOURS[0];
        assert!(buf.chunks(3).any(|p| p == [c.0, c.1, c.2]), "device 0's segments are drawn");
    }

    #[test]
    fn without_a_font_plotting_is_an_error_that_says_what_to_install() {
        let not_a_font =
            std::env::temp_dir().join(format!("not-a-font-{}.ttf", std::process::id()));
        std::fs::write(&not_a_font, b"plain text").unwrap_or_default();
        let candidates = ["/nonexistent/DejaVuSans.ttf", not_a_font.to_str().unwrap_or("")];
        let err = find_font(candidates).err().unwrap_or_default();
        let _ = std::fs::remove_file(&not_a_font);
        assert!(err.contains("fonts-dejavu-core") && err.contains("HETDSL_PLOT_FONT"), "{err}");
    }

    #[test]
    fn a_simulated_run_plots_its_packages() {
        let cases = hetdsl::sim::scenario::scenario("batel").unwrap_or_default();
        let case = cases.first().expect("batel has cases");
        let spec: hetdsl::balance::BalancerSpec = "dynamic:64".parse().expect("a spec");
        let r = case.run_with(&spec, &hetdsl::sim::SimOptions::default()).expect("simulates");
        let plot = RunPlot::of_sim(&case.machine, &case.kernel, &r);
        let kept = r.packages.iter().filter(|p| !p.aborted).count();
        assert_eq!(plot.segments.len(), kept);
        assert_eq!(plot.devices.len(), r.device_packages.len());
        let groups: f64 = plot.segments.iter().map(|s| s.groups).sum();
        assert_eq!(groups as u64, case.total_groups, "every work-group once (no back-ups)");
        assert!(plot.svg().unwrap_or_default().contains("(simulated)"));
    }

    #[test]
    fn a_blip_is_clipped_instead_of_flattening_the_axis() {
        let long = segment(0, 0.0, 1.0, 100.0, 1000.0);
        let blip = segment(1, 1.0, 1.001, 1.0, 1e6);
        let (top, clipped) = axis_top(&[long.clone(), blip.clone()], 1.001, |s| s.speed);
        assert!(clipped);
        assert!((1000.0..1100.0).contains(&top), "the axis reaches the lasting package's speed");
        let plot = RunPlot {
            title: "t".into(),
            subtitle: String::new(),
            devices: vec![(0, "a".into()), (1, "b".into())],
            segments: vec![long, blip],
            seconds: 1.001,
        };
        assert!(plot.svg().unwrap_or_default().contains("clipped"));
    }
}
