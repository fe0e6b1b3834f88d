//! PARAID (Weddle et al., FAST 2007): gears of powered disks over skewed striping.

use serde::{Deserialize, Serialize};

use super::{Extent, Personality, Striping};

/// PARAID's gears and shift rules (docs/sim-raid.md gives each default's source).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParaidParams {
    /// Disks powered in each gear, ascending; the last is the whole array.
    pub gears: Vec<usize>,
    /// The monitor's sampling interval, s.
    pub sample_s: f64,
    /// Moving averages of utilisation (exponential, this time constant), s.
    pub short_s: f64,
    pub long_s: f64,
    /// Up-shift when the busiest powered disk's short average passes this.
    pub up: f64,
    /// Down-shift when the long average, projected onto the lower gear, stays below this.
    pub down: f64,
    /// No shift sooner than this after the last, s.
    pub min_dwell_s: f64,
    /// Spin-downs a disk may make per day (None: its rated cycles over five years).
    pub cycles_per_day: Option<f64>,
}

impl Default for ParaidParams {
    fn default() -> Self {
        Self {
            gears: vec![2, 4],
            sample_s: 1.0,
            short_s: 5.0,
            long_s: 120.0,
            up: 0.8,
            down: 0.5,
            min_dwell_s: 600.0,
            cycles_per_day: None,
        }
    }
}

/// PARAID: data striped over every disk, the units of the disks a lower gear powers off
/// replicated across the disks it keeps (skewed striping), so every gear serves everything. A
/// monitor shifts up when the busiest powered disk's short utilisation average passes `up`,
/// and down when the long average projected onto the lower gear stays under `down`, no
/// sooner than the dwell after the last shift and within each disk's daily spin budget.
pub struct Paraid {
    pub striping: Striping,
    pub params: ParaidParams,
    /// Where replicas start on a disk: after its share of the data, in the space server disks
    /// leave unused.
    pub replica_base: u64,
    /// Daily spin-downs allowed per disk.
    pub budget_per_day: f64,
    gear: usize,
    target: usize,
    short: Vec<f64>,
    long: Vec<f64>,
    last_shift_ns: u64,
    /// Spin-downs per disk in the current day, and the day.
    cycles: Vec<u64>,
    day: u64,
    waking: Vec<bool>,
    /// Bytes written to each powered-off disk's replicas since it went off.
    stale: Vec<u64>,
}

const DAY_NS: u64 = 86_400_000_000_000;

impl Paraid {
    pub fn new(
        striping: Striping,
        params: ParaidParams,
        replica_base: u64,
        budget_per_day: f64,
    ) -> Self {
        let top = params.gears.len() - 1;
        let n = striping.disks;
        Self {
            striping,
            params,
            replica_base,
            budget_per_day,
            gear: top,
            target: top,
            short: vec![0.0; n],
            long: vec![0.0; n],
            last_shift_ns: 0,
            cycles: vec![0; n],
            day: 0,
            waking: vec![false; n],
            stale: vec![0; n],
        }
    }

    fn powered(&self) -> usize {
        self.params.gears[self.gear]
    }
}

impl Personality for Paraid {
    fn route(&mut self, offset: u64, bytes: u64, write: bool, out: &mut Vec<Extent>) {
        let m = self.powered();
        if m == self.striping.disks {
            return self.striping.route(offset, bytes, out);
        }
        // The units of powered-off disks come from their replicas, striped over the m disks.
        out.clear();
        let (n, unit) = (self.striping.disks as u64, self.striping.unit);
        let (mut at, end) = (offset, offset + bytes.max(1));
        while at < end {
            let stripe = at / unit;
            let within = at % unit;
            let take = (unit - within).min(end - at);
            let home = (stripe % n) as usize;
            let (disk, disk_offset) = if home < m {
                (home, (stripe / n) * unit + within)
            } else {
                if write {
                    // The home copy is now stale: copied back when its disk spins up.
                    self.stale[home] += take;
                }
                let r = stripe / n * (n - m as u64) + (home - m) as u64;
                (
                    (r % m as u64) as usize,
                    self.replica_base + r / m as u64 * unit + within,
                )
            };
            match out.iter_mut().find(|e| e.disk == disk) {
                Some(e) => e.bytes += take,
                None => out.push(Extent {
                    disk,
                    offset: disk_offset,
                    bytes: take,
                }),
            }
            at += take;
        }
    }

    fn idle_timeout_ns(&self, disk: usize) -> Option<u64> {
        // A disk outside the gear spins down as soon as its queue is empty.
        (disk >= self.params.gears[self.target] && !self.waking[disk]).then_some(0)
    }

    fn monitor_every_ns(&self) -> Option<u64> {
        Some((self.params.sample_s * 1e9).round() as u64)
    }

    fn monitor(&mut self, now_ns: u64, busy: &[f64], wake: &mut Vec<usize>) {
        let p = &self.params;
        let (a_short, a_long) = (
            (p.sample_s / p.short_s).min(1.0),
            (p.sample_s / p.long_s).min(1.0),
        );
        for ((short, long), b) in self.short.iter_mut().zip(&mut self.long).zip(busy) {
            *short += a_short * (b - *short);
            *long += a_long * (b - *long);
        }
        if now_ns / DAY_NS != self.day {
            self.day = now_ns / DAY_NS;
            self.cycles.iter_mut().for_each(|c| *c = 0);
        }
        if self.target != self.gear {
            return; // waiting for the next gear's disks to spin up
        }
        let m = self.powered();
        let hottest = self.short[..m].iter().copied().fold(0.0, f64::max);
        if hottest > p.up && self.gear + 1 < p.gears.len() {
            // Up-shifts answer load at once; only down-shifts wait out the dwell.
            self.shift_up(now_ns, wake);
            return;
        }
        if self.gear == 0 || now_ns < self.last_shift_ns + (p.min_dwell_s * 1e9) as u64 {
            return;
        }
        let low = p.gears[self.gear - 1];
        let busiest = self.long[..m].iter().copied().fold(0.0, f64::max);
        let projected = busiest * m as f64 / low as f64;
        let within_budget = (low..m).all(|d| (self.cycles[d] as f64) < self.budget_per_day);
        if projected < p.down && within_budget {
            self.gear -= 1;
            self.target = self.gear;
            self.last_shift_ns = now_ns;
            for c in &mut self.cycles[low..m] {
                *c += 1;
            }
        }
    }

    fn spun_up(&mut self, now_ns: u64, disk: usize) {
        self.waking[disk] = false;
        if self.target > self.gear && !self.waking.iter().any(|w| *w) {
            self.gear = self.target;
            self.last_shift_ns = now_ns;
        }
    }

    fn gear(&self) -> Option<usize> {
        Some(self.powered())
    }

    fn take_stale(&mut self, disk: usize) -> u64 {
        std::mem::take(&mut self.stale[disk])
    }
}

impl Paraid {
    /// Wakes the next gear's extra disks; requests keep the current gear until they are up.
    fn shift_up(&mut self, now_ns: u64, wake: &mut Vec<usize>) {
        self.target = self.gear + 1;
        self.last_shift_ns = now_ns;
        for d in self.powered()..self.params.gears[self.target] {
            self.waking[d] = true;
            wake.push(d);
        }
    }
}
