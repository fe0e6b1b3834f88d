//! PARAID (Weddle et al., FAST 2007): gears of powered disks over skewed striping.

use serde::{Deserialize, Serialize};

use super::{push_extent, Actions, DailyBudget, Extent, Personality, Striping};

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
///
/// Replicas are kept as published: a replica unit is its own extent in the replica area (a
/// seek away from the disk's own data); a write in a gear that powers a unit's home makes its
/// replica stale, and a down-shift first copies what is stale from the disks going off to
/// their replicas; a write in a gear that does not makes the home stale, copied back when the
/// home disk spins up.
pub struct Paraid {
    pub striping: Striping,
    pub params: ParaidParams,
    /// Where replicas start on a disk: after its share of the data, in the space server disks
    /// leave unused.
    pub replica_base: u64,
    budget: DailyBudget,
    gear: usize,
    target: usize,
    short: Vec<f64>,
    long: Vec<f64>,
    last_shift_ns: u64,
    waking: Vec<bool>,
    /// Bytes written to each powered-off disk's replicas since it went off.
    stale: Vec<u64>,
    /// Bytes written to each powered disk since its replicas were last brought up to date,
    /// and the lowest disk offset among them.
    replica_stale: Vec<u64>,
    replica_from: Vec<u64>,
}

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
            budget: DailyBudget::new(Some(budget_per_day), n),
            gear: top,
            target: top,
            short: vec![0.0; n],
            long: vec![0.0; n],
            last_shift_ns: 0,
            waking: vec![false; n],
            stale: vec![0; n],
            replica_stale: vec![0; n],
            replica_from: vec![u64::MAX; n],
        }
    }

    fn powered(&self) -> usize {
        self.params.gears[self.gear]
    }

    /// Where the replica of stripe unit `stripe` (home disk `home`, off in a gear of `m`
    /// disks) lives: its disk and the unit's start there.
    fn replica(&self, stripe: u64, home: usize, m: usize) -> (usize, u64) {
        let n = self.striping.disks as u64;
        let r = stripe / n * (n - m as u64) + (home - m) as u64;
        (
            (r % m as u64) as usize,
            self.replica_base + r / m as u64 * self.striping.unit,
        )
    }
}

impl Personality for Paraid {
    fn route(&mut self, offset: u64, bytes: u64, write: bool, out: &mut Vec<Extent>) {
        let m = self.powered();
        out.clear();
        let (n, unit) = (self.striping.disks as u64, self.striping.unit);
        let lowest = self.params.gears[0];
        let (mut at, end) = (offset, offset + bytes.max(1));
        while at < end {
            let stripe = at / unit;
            let within = at % unit;
            let take = (unit - within).min(end - at);
            let home = (stripe % n) as usize;
            let (disk, disk_offset) = if home < m {
                let disk_offset = (stripe / n) * unit + within;
                if write && home >= lowest {
                    // Its replica (in a lower gear) no longer matches.
                    self.replica_stale[home] += take;
                    self.replica_from[home] = self.replica_from[home].min(disk_offset);
                }
                (home, disk_offset)
            } else {
                if write {
                    // The home copy is now stale: copied back when its disk spins up.
                    self.stale[home] += take;
                }
                let (disk, unit_at) = self.replica(stripe, home, m);
                (disk, unit_at + within)
            };
            push_extent(out, disk, disk_offset, take);
            at += take;
        }
    }

    fn idle_timeout_ns(&self, disk: usize, _now_ns: u64) -> Option<u64> {
        // A disk outside the gear spins down as soon as its queue is empty.
        (disk >= self.params.gears[self.target] && !self.waking[disk]).then_some(0)
    }

    fn spinning_down(&mut self, now_ns: u64, disk: usize) {
        self.budget.spend(now_ns, disk);
    }

    fn monitor_every_ns(&self) -> Option<u64> {
        Some((self.params.sample_s * 1e9).round() as u64)
    }

    fn monitor(&mut self, now_ns: u64, busy: &[f64], act: &mut Actions) {
        let p = &self.params;
        let (a_short, a_long) = (
            (p.sample_s / p.short_s).min(1.0),
            (p.sample_s / p.long_s).min(1.0),
        );
        for ((short, long), b) in self.short.iter_mut().zip(&mut self.long).zip(busy) {
            *short += a_short * (b - *short);
            *long += a_long * (b - *long);
        }
        if self.target != self.gear {
            return; // waiting for the next gear's disks to spin up
        }
        let m = self.powered();
        let hottest = self.short[..m].iter().copied().fold(0.0, f64::max);
        if hottest > p.up && self.gear + 1 < p.gears.len() {
            // Up-shifts answer load at once; only down-shifts wait out the dwell.
            self.shift_up(now_ns, &mut act.wake);
            return;
        }
        if self.gear == 0 || now_ns < self.last_shift_ns + (p.min_dwell_s * 1e9) as u64 {
            return;
        }
        let low = p.gears[self.gear - 1];
        let busiest = self.long[..m].iter().copied().fold(0.0, f64::max);
        let projected = busiest * m as f64 / low as f64;
        let within_budget = (low..m).all(|d| self.budget.allows(now_ns, d));
        if projected < p.down && within_budget {
            self.gear -= 1;
            self.target = self.gear;
            self.last_shift_ns = now_ns;
            self.sync_replicas(low, m, act);
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

    /// Before disks `low..m` go off: each reads what was written to it since its replicas were
    /// last current, and the `low` disks that keep its replicas write their shares.
    fn sync_replicas(&mut self, low: usize, m: usize, act: &mut Actions) {
        for home in low..m {
            let bytes = std::mem::take(&mut self.replica_stale[home]);
            let from = std::mem::replace(&mut self.replica_from[home], u64::MAX);
            if bytes == 0 {
                continue;
            }
            act.copied += bytes;
            act.sync.push(Extent {
                disk: home,
                offset: from,
                bytes,
            });
            let share = bytes.div_ceil(low as u64);
            act.sync.extend((0..low).map(|disk| Extent {
                disk,
                offset: self.replica_base,
                bytes: share,
            }));
        }
    }
}
