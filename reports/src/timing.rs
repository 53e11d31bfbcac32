//! How the formats word a migration's performance (`timing`, `projection`,
//! `device`, `bandwidth`), so that the table, Markdown and HTML say the same
//! thing. A simulator run has no GPU timing and reads as such, never as a
//! speedup; a run port judged not worth offloading keeps its reason.

use crate::migration::{Migration, SIMULATOR};

/// What a simulator run shows where a GPU run shows its speedups.
pub const NO_GPU_TIMING: &str = "simulator — no GPU timing";

/// A speedup: `4342.9×`, `0.43×`, `<0.01×`.
pub fn speedup(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.1}×")
    } else if v >= 0.01 {
        format!("{v:.2}×")
    } else {
        "<0.01×".into()
    }
}

/// A duration to three significant figures: `1.25 s`, `912 ms`, `4.30 µs`.
pub fn seconds(s: f64) -> String {
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "µs")
    } else {
        (s * 1e9, "ns")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// Seconds as `port migrate` and `port verify` print them, two decimals:
/// `1.23 s`, `4.56 ms`, `7.8 µs` (the report's tables use [`seconds`]).
pub fn secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// The speedups a migration can show.
#[derive(Debug, Clone, PartialEq)]
pub enum Speedups {
    /// No timing recorded (refused, failed, or an older record).
    None,
    /// The simulator ran the kernels: nothing to say about a GPU's speed.
    Simulator,
    /// Measured on a GPU; either may be missing.
    Gpu {
        kernel: Option<f64>,
        end_to_end: Option<f64>,
    },
}

pub fn speedups(m: &Migration) -> Speedups {
    if m.on_simulator() {
        return Speedups::Simulator;
    }
    match &m.timing {
        Some(t) if t.speedup_kernel.is_some() || t.speedup_end_to_end.is_some() => Speedups::Gpu {
            kernel: t.speedup_kernel,
            end_to_end: t.speedup_end_to_end,
        },
        _ => Speedups::None,
    }
}

/// The speedups in one cell: `4342.9× kernel, 212.1× end-to-end`, or
/// [`NO_GPU_TIMING`], or `-`.
pub fn speedups_text(m: &Migration) -> String {
    match speedups(m) {
        Speedups::None => "-".into(),
        Speedups::Simulator => NO_GPU_TIMING.into(),
        Speedups::Gpu { kernel, end_to_end } => {
            let parts: Vec<String> = [(kernel, "kernel"), (end_to_end, "end-to-end")]
                .into_iter()
                .filter_map(|(v, what)| v.map(|v| format!("{} {what}", speedup(v))))
                .collect();
            parts.join(", ")
        }
    }
}

/// Where the kernels ran: the device's name, `simulator`, the backend when
/// no device was recorded, or `-`.
pub fn device_text(m: &Migration) -> String {
    if m.on_simulator() {
        return SIMULATOR.into();
    }
    match (&m.device, &m.verification) {
        (Some(d), _) if !d.name.is_empty() => d.name.clone(),
        (_, Some(v)) => v.backend.clone(),
        _ => "-".into(),
    }
}

/// The device's particulars after its name: `sm_90, 132 SMs`, or empty.
pub fn device_detail(m: &Migration) -> String {
    let Some(d) = m.device.as_ref().filter(|_| !m.on_simulator()) else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(cc) = &d.compute_capability {
        parts.push(format!("sm_{}", cc.replace('.', "")));
    }
    if let Some(n) = d.sms {
        parts.push(format!("{n} SMs"));
    }
    parts.join(", ")
}

/// The original's time under CPython, or `-`; marked `(np.vectorize)`
/// when the original was applied per element rather than called once.
pub fn cpython_text(m: &Migration) -> String {
    let Some(t) = m.timing.as_ref() else {
        return "-".into();
    };
    let Some(s) = t.cpython_s else {
        return "-".into();
    };
    let vectorized = t
        .cpython_call
        .as_ref()
        .is_some_and(|c| c.via == Some(crate::migration::Via::Vectorize));
    if vectorized {
        format!("{} (np.vectorize)", seconds(s))
    } else {
        seconds(s)
    }
}

/// port judged offloading this function not worth it.
pub fn not_profitable(m: &Migration) -> bool {
    m.projection
        .as_ref()
        .is_some_and(|p| p.profitable == Some(false))
}

/// The projection in one cell: `2.4×, hotspot 58.4% of time`; with
/// `not profitable: <why>` when port judged it so; `-` on the simulator or
/// when nothing was projected.
pub fn projection_text(m: &Migration) -> String {
    let Some(p) = &m.projection else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if let Some(x) = p.program_speedup {
        parts.push(speedup(x));
    }
    if let Some(h) = p.hotspot_pct {
        parts.push(format!("hotspot {h:.1}% of time"));
    }
    let mut out = parts.join(", ");
    if p.profitable == Some(false) {
        if !out.is_empty() {
            out.push_str("; ");
        }
        out.push_str("not profitable");
        if let Some(why) = p.why.as_deref().filter(|w| !w.trim().is_empty()) {
            out.push_str(": ");
            out.push_str(why.trim());
        }
        return out;
    }
    if out.is_empty() && !m.on_simulator() {
        // Nothing projected: say why, when port said.
        if let Some(why) = p.why.as_deref().filter(|w| !w.trim().is_empty()) {
            return why.trim().to_string();
        }
    }
    if out.is_empty() {
        "-".into()
    } else {
        out
    }
}

/// The achieved bandwidth of a memory-bound kernel: `83% of peak (2800 /
/// 3352 GB/s)`; `None` when not recorded or not memory-bound.
pub fn bandwidth_text(m: &Migration) -> Option<String> {
    if m.on_simulator() {
        return None;
    }
    let b = m.bandwidth.as_ref()?;
    if b.memory_bound != Some(true) {
        return None;
    }
    let pct = b.pct_of_peak?;
    let peak = b
        .peak_gb_s
        .or_else(|| m.device.as_ref().and_then(|d| d.peak_bandwidth_gb_s));
    Some(match (b.achieved_gb_s, peak) {
        (Some(a), Some(p)) => format!("{pct:.0}% of peak ({a:.0} / {p:.0} GB/s)"),
        _ => format!("{pct:.0}% of peak"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedups_keep_their_meaning_at_every_size() {
        assert_eq!(speedup(4342.94), "4342.9×");
        assert_eq!(speedup(1.0), "1.0×");
        assert_eq!(speedup(0.43), "0.43×");
        // Never "0.0×": a tiny speedup is still not zero.
        assert_eq!(speedup(0.004), "<0.01×");
    }

    #[test]
    fn durations_have_three_figures_and_a_unit() {
        assert_eq!(seconds(1.254), "1.25 s");
        assert_eq!(seconds(0.912), "912 ms");
        assert_eq!(seconds(0.0035), "3.50 ms");
        assert_eq!(seconds(0.00021), "210 µs");
        assert_eq!(seconds(0.0000043), "4.30 µs");
        assert_eq!(seconds(4e-8), "40.0 ns");
    }
}
