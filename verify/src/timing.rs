//! Timing figures and what they mean for the program: medians, the speedups
//! over CPython, the Amdahl projection from the profile, the transfer cost,
//! the "not profitable" verdict with its reason, and the achieved fraction
//! of peak bandwidth. Pure functions of measured numbers, so the rules are
//! tested without a GPU.

/// The median of `xs` (sorted in place); `None` when empty.
pub fn median(xs: &mut [f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

pub use port_reports::migration::{
    Bandwidth, CostFloor, CpythonCall, Projection, Repeats, Timing, Via,
};
/// Seconds for people: `1.23 s`, `4.56 ms`, `7.8 µs` (the wording of the
/// projection's reasons is the text's).
pub use port_reports::timing::secs;

/// What a run moved and launched, for the projection's reasons.
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    pub bytes_to_device: usize,
    pub bytes_to_host: usize,
    pub launches: usize,
    /// Library steps run (cuBLAS, cuSOLVER, or the host's stand-in).
    pub library_calls: usize,
    /// Bytes of the arrays the launches take, once per launch.
    pub device_bytes: usize,
    /// Elements of the largest array.
    pub elements: usize,
}

/// Below this many elements an array is "small" for a GPU.
pub const SMALL_ARRAY: usize = 100_000;

/// The least time one kernel launch takes on any current GPU, queued
/// back to back from the host (driver and launch latency, no work): a
/// floor for a plan's time when there is no device to time it on.
pub const LAUNCH_FLOOR_S: f64 = 3e-6;

/// The fastest host link of a current GPU: PCIe 5.0 × 16, 64 GB/s each
/// way (an NVLink-C2C host is faster; port has not met one).
pub const LINK_PEAK_BYTES_PER_S: f64 = 64e9;

/// The fastest device memory of a current GPU: the H200's HBM3e, 4.8 TB/s.
pub const MEMORY_PEAK_BYTES_PER_S: f64 = 4.8e12;

/// The least one call of a run like `traffic` takes on any GPU.
pub fn floor(traffic: Traffic) -> CostFloor {
    let moved = (traffic.bytes_to_device + traffic.bytes_to_host) as f64;
    let calls = (traffic.launches + traffic.library_calls) as f64;
    CostFloor {
        launches: traffic.launches,
        library_calls: traffic.library_calls,
        bytes_to_device: traffic.bytes_to_device,
        bytes_to_host: traffic.bytes_to_host,
        device_bytes: traffic.device_bytes,
        launch_s: LAUNCH_FLOOR_S,
        link_bytes_per_s: LINK_PEAK_BYTES_PER_S,
        memory_bytes_per_s: MEMORY_PEAK_BYTES_PER_S,
        seconds: calls * LAUNCH_FLOOR_S
            + moved / LINK_PEAK_BYTES_PER_S
            + traffic.device_bytes as f64 / MEMORY_PEAK_BYTES_PER_S,
    }
}

/// Amdahl's law for a part `pct` percent of the run, sped up `speedup` times.
pub fn amdahl(pct: f64, speedup: f64) -> f64 {
    let p = (pct / 100.0).clamp(0.0, 1.0);
    1.0 / ((1.0 - p) + p / speedup)
}

fn megabytes(b: usize) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// The floor's terms in words: `2 launches at 3 µs, 1 library call, 16.8
/// MB over the host link at 64 GB/s, 50.3 MB of device memory at 4.8 TB/s`
/// (terms that are zero left out).
fn floor_terms(f: &CostFloor) -> String {
    let mut parts = vec![format!(
        "{} launch{} at {} each",
        f.launches,
        if f.launches == 1 { "" } else { "es" },
        secs(f.launch_s)
    )];
    if f.library_calls > 0 {
        parts.push(format!(
            "{} library call{}",
            f.library_calls,
            if f.library_calls == 1 { "" } else { "s" }
        ));
    }
    let moved = f.bytes_to_device + f.bytes_to_host;
    if moved > 0 {
        parts.push(format!(
            "{} over the host link at {:.0} GB/s",
            megabytes(moved),
            f.link_bytes_per_s / 1e9
        ));
    }
    if f.device_bytes > 0 {
        parts.push(format!(
            "{} of device memory at {:.1} TB/s",
            megabytes(f.device_bytes),
            f.memory_bytes_per_s / 1e12
        ));
    }
    parts.join(", ")
}

/// The projection from measured figures. `h2d_bytes_per_s` is the measured
/// host-to-device bandwidth (`None` on the simulator).
pub fn project(
    hotspot_pct: Option<f64>,
    t: &Timing,
    traffic: Traffic,
    h2d_bytes_per_s: Option<f64>,
) -> Projection {
    let moved = traffic.bytes_to_device + traffic.bytes_to_host;
    let transfer_s = h2d_bytes_per_s
        .filter(|b| *b > 0.0)
        .map(|b| moved as f64 / b);
    let least = floor(traffic);
    let mut p = Projection {
        hotspot_pct,
        transfer_s,
        floor: Some(least.clone()),
        ..Projection::default()
    };
    let (Some(e2e), Some(speedup), Some(cpython), Some(kernel)) = (
        t.end_to_end_s,
        t.speedup_end_to_end,
        t.cpython_s,
        t.kernel_s,
    ) else {
        p.why = Some(format!(
            "no GPU timing: the kernels ran on the simulator, which verifies results but has no meaningful clock; on any GPU a call takes at least {} ({})",
            secs(least.seconds),
            floor_terms(&least)
        ));
        // What no GPU can beat: one launch latency per launch, the bytes
        // at the host link's and the memory's peak. When that is longer
        // than CPython's call, the plan cannot pay.
        if let Some(cpython) = t.cpython_s.filter(|c| *c > 0.0 && least.seconds >= *c) {
            p.profitable = Some(false);
            p.why = Some(format!(
                "not profitable on any GPU: a call takes at least {} ({}), longer than CPython's {}; the kernels ran on the simulator",
                secs(least.seconds),
                floor_terms(&least),
                secs(cpython)
            ));
        }
        return p;
    };
    p.program_speedup = hotspot_pct.map(|pct| amdahl(pct, speedup));
    p.profitable = Some(speedup >= 1.0);
    let transfer_share = transfer_s.map(|x| (x / e2e).min(1.0)).unwrap_or(0.0);
    let launch_bound = e2e - kernel - transfer_s.unwrap_or(0.0);
    p.why = Some(if speedup >= 1.0 {
        let mut why = format!(
            "the kernels are {:.1}x and the whole call {:.1}x faster than CPython",
            t.speedup_kernel.unwrap_or(0.0),
            speedup
        );
        if transfer_s.is_some() {
            why.push_str(&format!(
                "; transfers are {:.0}% of the call",
                transfer_share * 100.0
            ));
        }
        if let Some(pct) = hotspot_pct {
            why.push_str(&format!(
                "; the function is {pct:.1}% of the program, so the program gains at most {:.2}x",
                amdahl(pct, f64::INFINITY)
            ));
        }
        why
    } else if transfer_share >= 0.5 {
        format!(
            "not profitable: transfers dominate — {} moved take {} of the {} call, while CPython takes {}; keep the arrays on the GPU across calls",
            megabytes(moved),
            secs(transfer_s.unwrap_or(0.0)),
            secs(e2e),
            secs(cpython)
        )
    } else if traffic.elements < SMALL_ARRAY {
        format!(
            "not profitable: arrays too small — {} elements; {} launch(es) and their set-up cost {} while CPython takes {}",
            traffic.elements,
            traffic.launches,
            secs(e2e),
            secs(cpython)
        )
    } else if launch_bound > kernel {
        format!(
            "not profitable: launch overhead — {} launch(es), allocation and reads of results take {} of the {} call, the kernels {}",
            traffic.launches,
            secs(launch_bound.max(0.0)),
            secs(e2e),
            secs(kernel)
        )
    } else {
        format!(
            "not profitable: the kernels themselves take {} against CPython's {}",
            secs(kernel),
            secs(cpython)
        )
    });
    p
}

/// Achieved bandwidth of the kernels against the device's peak.
pub fn bandwidth(
    bytes: usize,
    kernel_s: f64,
    peak_gb_s: Option<f64>,
    memory_bound: bool,
) -> Option<Bandwidth> {
    (kernel_s > 0.0 && bytes > 0).then(|| {
        let achieved = bytes as f64 / kernel_s / 1e9;
        Bandwidth {
            bytes: Some(bytes as u64),
            achieved_gb_s: Some(achieved),
            peak_gb_s,
            pct_of_peak: peak_gb_s
                .filter(|p| *p > 0.0 && memory_bound)
                .map(|p| 100.0 * achieved / p),
            memory_bound: Some(memory_bound),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_timing(kernel: f64, e2e: f64, cpython: f64) -> Timing {
        Timing {
            compile_s: Some(0.01),
            kernel_s: Some(kernel),
            end_to_end_s: Some(e2e),
            cpython_s: Some(cpython),
            ..Timing::default()
        }
        .with_speedups()
    }

    /// On the simulator there is no clock, but launches and copies have a
    /// floor: a plan of thousands of launches, or one that copies 128 MB
    /// for a CPython call of a millisecond, cannot pay on any GPU, and says
    /// so; a plan of a few launches stays unknown, with its floor stated.
    #[test]
    fn the_simulator_says_when_the_floor_is_longer_than_cpython() {
        let t = Timing {
            cpython_s: Some(1e-3),
            ..Timing::default()
        };
        let many = Traffic {
            launches: 8064,
            elements: 3,
            ..Traffic::default()
        };
        let p = project(None, &t, many, None);
        assert_eq!(p.profitable, Some(false));
        assert!(
            p.why
                .as_deref()
                .unwrap_or_default()
                .starts_with("not profitable on any GPU: a call takes at least 24.19 ms (8064 launches at 3.0 µs each), longer than CPython's 1.00 ms"),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
        let few = Traffic {
            launches: 4,
            ..many
        };
        let p = project(None, &t, few, None);
        assert_eq!(p.profitable, None);
        assert!(
            p.why.as_deref().unwrap_or_default().ends_with(
                "has no meaningful clock; on any GPU a call takes at least 12.0 µs (4 launches at 3.0 µs each)"
            ),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
        let copies = Traffic {
            launches: 2,
            library_calls: 1,
            bytes_to_device: 96_000_000,
            bytes_to_host: 32_000_000,
            device_bytes: 128_000_000,
            elements: 4_000_000,
        };
        let p = project(None, &t, copies, None);
        assert_eq!(p.profitable, Some(false));
        let f = p.floor.as_ref().unwrap();
        assert_eq!((f.launches, f.library_calls), (2, 1));
        assert!(
            (f.seconds - (9e-6 + 2e-3 + 128e6 / 4.8e12)).abs() < 1e-12,
            "{f:?}"
        );
        assert!(
            p.why.as_deref().unwrap_or_default().contains(
                "(2 launches at 3.0 µs each, 1 library call, 128.0 MB over the host link at 64 GB/s, 128.0 MB of device memory at 4.8 TB/s)"
            ),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn amdahl_limits() {
        assert!((amdahl(50.0, 2.0) - 1.0 / 0.75).abs() < 1e-12);
        assert!((amdahl(50.0, f64::INFINITY) - 2.0).abs() < 1e-12);
        assert_eq!(amdahl(0.0, 100.0), 1.0);
    }

    #[test]
    fn profitable_call_projects_with_amdahl() {
        let t = gpu_timing(1e-4, 1e-3, 0.1);
        assert_eq!(t.speedup_kernel, Some(1000.0));
        let traffic = Traffic {
            bytes_to_device: 8_000_000,
            bytes_to_host: 8_000_000,
            launches: 1,
            library_calls: 0,
            device_bytes: 0,
            elements: 1_000_000,
        };
        let p = project(Some(40.0), &t, traffic, Some(16e9));
        assert_eq!(p.profitable, Some(true));
        assert!((p.transfer_s.unwrap() - 1e-3).abs() < 1e-12);
        assert!((p.program_speedup.unwrap() - amdahl(40.0, 100.0)).abs() < 1e-12);
        assert!(
            p.why
                .as_deref()
                .unwrap_or_default()
                .contains("at most 1.67x"),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
    }

    #[test]
    fn transfers_dominating_is_the_reason() {
        let t = gpu_timing(1e-5, 4e-3, 2e-3);
        let traffic = Traffic {
            bytes_to_device: 40_000_000,
            bytes_to_host: 20_000_000,
            launches: 1,
            library_calls: 0,
            device_bytes: 0,
            elements: 5_000_000,
        };
        let p = project(Some(10.0), &t, traffic, Some(20e9));
        assert_eq!(p.profitable, Some(false));
        assert!(
            p.why
                .as_deref()
                .unwrap_or_default()
                .starts_with("not profitable: transfers dominate"),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
        assert!(p.program_speedup.unwrap() < 1.0);
    }

    #[test]
    fn small_arrays_are_the_reason() {
        let t = gpu_timing(5e-6, 6e-5, 1e-5);
        let traffic = Traffic {
            bytes_to_device: 8000,
            bytes_to_host: 8000,
            launches: 2,
            library_calls: 0,
            device_bytes: 0,
            elements: 1000,
        };
        let p = project(None, &t, traffic, Some(20e9));
        assert_eq!(p.profitable, Some(false));
        assert!(
            p.why
                .as_deref()
                .unwrap_or_default()
                .contains("arrays too small — 1000 elements"),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
        assert_eq!(p.program_speedup, None);
    }

    #[test]
    fn launch_overhead_is_the_reason() {
        let t = gpu_timing(1e-4, 2e-2, 1e-2);
        let traffic = Traffic {
            bytes_to_device: 1_000_000,
            bytes_to_host: 8,
            launches: 40,
            library_calls: 0,
            device_bytes: 0,
            elements: 1_000_000,
        };
        let p = project(None, &t, traffic, Some(20e9));
        assert!(
            p.why
                .as_deref()
                .unwrap_or_default()
                .contains("launch overhead"),
            "{}",
            p.why.as_deref().unwrap_or_default()
        );
    }

    #[test]
    fn simulator_has_no_verdict() {
        let t = Timing {
            compile_s: Some(0.01),
            cpython_s: Some(0.2),
            ..Timing::default()
        }
        .with_speedups();
        assert_eq!(t.speedup_kernel, None);
        let p = project(Some(30.0), &t, Traffic::default(), None);
        assert_eq!(p.profitable, None);
        assert_eq!(p.program_speedup, None);
        assert_eq!(p.transfer_s, None);
        assert_eq!(p.hotspot_pct, Some(30.0));
        assert!(p.why.as_deref().unwrap_or_default().contains("simulator"));
    }

    #[test]
    fn bandwidth_against_peak() {
        // H100 SXM: 2619 MHz HBM3 on a 5120-bit bus.
        let peak = crate::gpu::peak_bandwidth_gb_s(2_619_000, 5120).unwrap();
        assert!((peak - 3352.32).abs() < 0.01, "{peak}");
        let b = bandwidth(3 * 4 * (1 << 24), 7.2e-5, Some(peak), true).unwrap();
        assert!(
            (b.achieved_gb_s.unwrap_or(0.0) - 2796.2).abs() < 1.0,
            "{:?}",
            b.achieved_gb_s
        );
        assert!((b.pct_of_peak.unwrap() - 83.4).abs() < 0.1);
        let c = bandwidth(1000, 1e-3, Some(peak), false).unwrap();
        assert_eq!(c.pct_of_peak, None);
        assert!(bandwidth(0, 1e-3, Some(peak), true).is_none());
    }
}
