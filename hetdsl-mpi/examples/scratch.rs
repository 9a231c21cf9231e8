use hetdsl::sim::{simulate, CostProfile, CostTable, SimOptions};
use hetdsl::Package;
use hetdsl_mpi::carry::{Carried, NodeMemory};
use hetdsl_mpi::scenario::{cluster, TOTAL_GROUPS};
fn main() {
    let fills: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(8);
    let spec: hetdsl::balance::BalancerSpec =
        std::env::var("NB").unwrap_or("sigmoid".into()).parse().unwrap();
    let verbose = std::env::var("V").is_ok();
    let carry = std::env::var("NOCARRY").is_err();
    for (name, prof) in [
        ("uniform", CostProfile::Uniform),
        ("random", CostProfile::Random { spread: 0.6, seed: 11 }),
    ] {
        let c = cluster(1, false, prof.clone());
        let table = CostTable::new(&prof, TOTAL_GROUPS, 4096);
        let len = fills * 4 * 1056;
        let mut effs = vec![];
        let mut bals = vec![];
        let mem = NodeMemory::new();
        for k in 0..60u64 {
            let off = k * 1_000_000 + 12345;
            let p = Package { offset: off, len };
            let slices = 256u64;
            let costs: Vec<f64> = (0..slices)
                .map(|i| {
                    let a = p.offset + p.len * i / slices;
                    let b = p.offset + p.len * (i + 1) / slices;
                    table.cost(a, b - a) / (b - a) as f64
                })
                .collect();
            let mean = table.cost(p.offset, p.len) / p.len as f64;
            let t = CostTable::new(
                &CostProfile::Measured { slices: costs.clone() },
                p.len,
                slices as usize,
            );
            let devs: Vec<_> = c.nodes[0]
                .devices
                .iter()
                .map(|d| hetdsl::sim::SimDevice { speed: d.speed / mean, ..d.clone() })
                .collect();
            let mut b: Box<dyn hetdsl::Balancer> = if carry {
                Box::new(Carried::new(spec.build(), mem.clone()))
            } else {
                spec.build()
            };
            let r = simulate(
                &devs,
                &t,
                b.as_mut(),
                &SimOptions { seed: k, loss: None, backups: true, waves: false },
            )
            .unwrap();
            // ideal over GPUs only
            let ideal: f64 =
                1.0 / devs.iter().skip(1).map(|d| 1.0 / d.alone_seconds(&t)).sum::<f64>();
            let e = ideal / r.makespan;
            if k > 0 {
                effs.push(e);
                bals.push(r.balance);
            }
            if verbose && k > 0 && e < 0.9 {
                println!(
                    "eff {e:.3} cost {:?}",
                    costs
                        .iter()
                        .step_by(16)
                        .map(|c| (c * 100.0).round() / 100.0)
                        .collect::<Vec<_>>()
                );
                for sp in &r.packages {
                    print!(
                        "d{} {}+{} [{:.3}-{:.3}]{} ",
                        sp.device,
                        sp.package.offset,
                        sp.package.len,
                        sp.start,
                        sp.end,
                        if sp.backup { "B" } else { "" }
                    );
                }
                println!(" mk {:.3} ideal {:.3}", r.makespan, ideal);
            }
        }
        let m: f64 = effs.iter().sum::<f64>() / effs.len() as f64;
        let mb: f64 = bals.iter().sum::<f64>() / bals.len() as f64;
        println!(
            "{name} fills {fills}: mean node eff (GPU ideal) {m:.3} bal {mb:.3} min {:.3}",
            effs.iter().cloned().fold(1.0, f64::min)
        );
    }
}
