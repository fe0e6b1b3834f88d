//! What a run keeps: its decisions as events (capped, with the total counted) and its time
//! series averaged over bins of the chosen resolution, so memory grows with simulated time
//! divided by the resolution, not with ticks.

use serde::Serialize;

/// What a policy or the hardware decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The fans' PWM % (value).
    Fan,
    /// A job (subject) moved to a core (value).
    Migrate,
    /// Active DIMMs (value).
    Dimms,
    /// Batch cores' mean P-state index over the last fan interval (value; 0 is fastest).
    Dvfs,
    /// Emergency clock gating engaged / released on a node (subject).
    GatingOn,
    GatingOff,
    /// The SSD cache's size, GB (value).
    Cache,
    /// App-Oracle's contingency plan on (1) or off (0).
    Oracle,
    /// A service job (subject) entered phase (value).
    Phase,
    /// A service job (subject) finished.
    Done,
}

impl EventKind {
    pub const ALL: [EventKind; 10] = [
        EventKind::Fan,
        EventKind::Migrate,
        EventKind::Dimms,
        EventKind::Dvfs,
        EventKind::GatingOn,
        EventKind::GatingOff,
        EventKind::Cache,
        EventKind::Oracle,
        EventKind::Phase,
        EventKind::Done,
    ];
    pub const NAMES: [&'static str; 10] = [
        "fan",
        "migrate",
        "dimms",
        "dvfs",
        "gating_on",
        "gating_off",
        "cache",
        "oracle",
        "phase",
        "done",
    ];

    pub fn code(self) -> u8 {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Event {
    pub t_ns: u64,
    pub kind: EventKind,
    pub subject: u32,
    pub value: f64,
}

#[derive(Debug, Default)]
pub struct Events {
    pub kept: Vec<Event>,
    pub total: u64,
    cap: usize,
}

impl Events {
    pub fn with_cap(cap: usize) -> Self {
        Self {
            kept: Vec::new(),
            total: 0,
            cap,
        }
    }

    pub fn push(&mut self, t_ns: u64, kind: EventKind, subject: u32, value: f64) {
        self.total += 1;
        if self.kept.len() < self.cap {
            self.kept.push(Event {
                t_ns,
                kind,
                subject,
                value,
            });
        }
    }
}

/// One tick's readings, as the series averages them.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sample {
    pub core_max_c: f64,
    pub dimm_max_c: f64,
    pub sink_c: f64,
    pub pwm: f64,
    pub disk_frac: f64,
    pub disk_mb_s: f64,
    pub ssd_mb_s: f64,
    pub cache_gb: f64,
    pub gating: f64,
    pub socket_w: f64,
    pub memory_w: f64,
    pub fans_w: f64,
    pub disks_w: f64,
    pub active_dimms: f64,
    pub batch_speed: f64,
}

/// Column names of [`Series`], in the order of [`Sample`]'s fields after `t_s`.
pub const SERIES_COLUMNS: [&str; 15] = [
    "core_max_c",
    "dimm_max_c",
    "sink_c",
    "pwm",
    "disk_frac",
    "disk_mb_s",
    "ssd_mb_s",
    "cache_gb",
    "gating",
    "socket_w",
    "memory_w",
    "fans_w",
    "disks_w",
    "active_dimms",
    "batch_speed",
];

impl Sample {
    fn values(&self) -> [f64; 15] {
        [
            self.core_max_c,
            self.dimm_max_c,
            self.sink_c,
            self.pwm,
            self.disk_frac,
            self.disk_mb_s,
            self.ssd_mb_s,
            self.cache_gb,
            self.gating,
            self.socket_w,
            self.memory_w,
            self.fans_w,
            self.disks_w,
            self.active_dimms,
            self.batch_speed,
        ]
    }
}

/// Bin means: `t_s[k]` is the start of bin k, `columns[c][k]` the mean of column c over it.
#[derive(Debug, Default, Clone)]
pub struct Series {
    pub t_s: Vec<f64>,
    pub columns: Vec<Vec<f64>>,
    sum: [f64; 15],
    ticks: u64,
    bin_ticks: u64,
    bin_s: f64,
}

impl Series {
    pub fn new(bin_ticks: u64, bin_s: f64) -> Self {
        Self {
            columns: vec![Vec::new(); SERIES_COLUMNS.len()],
            bin_ticks: bin_ticks.max(1),
            bin_s,
            ..Self::default()
        }
    }

    pub fn add(&mut self, sample: &Sample) {
        for (s, v) in self.sum.iter_mut().zip(sample.values()) {
            *s += v;
        }
        self.ticks += 1;
        if self.ticks == self.bin_ticks {
            self.flush();
        }
    }

    /// Closes the partial bin at the end of a run.
    pub fn flush(&mut self) {
        if self.ticks == 0 {
            return;
        }
        self.t_s.push(self.t_s.len() as f64 * self.bin_s);
        for (c, s) in self.columns.iter_mut().zip(&mut self.sum) {
            c.push(*s / self.ticks as f64);
            *s = 0.0;
        }
        self.ticks = 0;
    }
}
