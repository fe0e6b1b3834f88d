//! Disk models as data (the shipped `disks.toml`, extendable by users) and what the simulators
//! and the emulated disk ask of them: a request's service time from seek, rotation and zoned
//! transfer, the power of each state, and the break-even idle time that makes spinning down
//! worth it.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A model that makes no sense, with the model and key named.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct ModelError(pub String);

/// A power state's draw: watts, or the currents of the 12 V and 5 V rails a datasheet gives.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Power {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a12: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a5: Option<f64>,
}

impl Power {
    /// Watts: as given, or 12 V · I₁₂ + 5 V · I₅.
    pub fn watts(&self) -> f64 {
        self.w
            .unwrap_or(12.0 * self.a12.unwrap_or(0.0) + 5.0 * self.a5.unwrap_or(0.0))
    }

    fn check(&self, at: &str) -> Result<(), ModelError> {
        let given = [self.w, self.a12, self.a5];
        if self.w.is_some() && (self.a12.is_some() || self.a5.is_some()) {
            return Err(ModelError(format!(
                "{at}: give watts (`w`) or rail currents (`a12`, `a5`), not both"
            )));
        }
        if given.iter().all(Option::is_none) {
            return Err(ModelError(format!(
                "{at}: no power given (`w`, or `a12` and `a5`)"
            )));
        }
        for v in given.into_iter().flatten() {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ModelError(format!("{at}: {v} must be 0 or more")));
            }
        }
        Ok(())
    }
}

/// One request's service time by its parts, s: the model's, and what a slowed disk (running
/// at a fraction r of its speed, under vibration) adds to it, S / r − S.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Charge {
    pub overhead_s: f64,
    pub seek_s: f64,
    pub rotation_s: f64,
    pub transfer_s: f64,
    pub slowdown_s: f64,
}

impl Charge {
    pub fn total_s(&self) -> f64 {
        self.overhead_s + self.seek_s + self.rotation_s + self.transfer_s + self.slowdown_s
    }

    /// The model's own time, without the slowdown.
    pub fn model_s(&self) -> f64 {
        self.overhead_s + self.seek_s + self.rotation_s + self.transfer_s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Hdd,
    Ssd,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskModel {
    pub label: String,
    pub kind: Kind,
    /// 10^9 bytes.
    pub capacity_gb: f64,
    pub rpm: u32,
    pub seek_track_ms: f64,
    pub seek_avg_ms: f64,
    pub seek_full_ms: f64,
    /// Sustained transfer at LBA 0 and at the last LBA, MB/s (10^6 bytes).
    pub outer_mb_s: f64,
    pub inner_mb_s: f64,
    pub overhead_ms: f64,
    pub active: Power,
    pub idle: Power,
    pub standby: Power,
    pub spin_up_s: f64,
    pub spin_up_j: f64,
    pub spin_down_s: f64,
    pub spin_down_j: f64,
    pub start_stop_cycles: u64,
}

impl DiskModel {
    /// Refuses what makes the model meaningless, naming the model and the key.
    pub fn check(&self, name: &str) -> Result<(), ModelError> {
        let at = |k: &str| format!("disk model `{name}`: `{k}`");
        for (k, v) in [
            ("seek_track_ms", self.seek_track_ms),
            ("seek_avg_ms", self.seek_avg_ms),
            ("seek_full_ms", self.seek_full_ms),
            ("overhead_ms", self.overhead_ms),
            ("spin_up_s", self.spin_up_s),
            ("spin_up_j", self.spin_up_j),
            ("spin_down_s", self.spin_down_s),
            ("spin_down_j", self.spin_down_j),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ModelError(format!("{} = {v} must be 0 or more", at(k))));
            }
        }
        for (k, v) in [
            ("capacity_gb", self.capacity_gb),
            ("outer_mb_s", self.outer_mb_s),
            ("inner_mb_s", self.inner_mb_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ModelError(format!("{} = {v} must be above 0", at(k))));
            }
        }
        if !(self.seek_track_ms <= self.seek_avg_ms && self.seek_avg_ms <= self.seek_full_ms) {
            return Err(ModelError(format!(
                "{}: seeks must grow: track {} ≤ average {} ≤ full {} ms",
                at("seek_*_ms"),
                self.seek_track_ms,
                self.seek_avg_ms,
                self.seek_full_ms
            )));
        }
        if self.inner_mb_s > self.outer_mb_s {
            return Err(ModelError(format!(
                "{} = {} is above `outer_mb_s` = {}: the outer zone is the faster",
                at("inner_mb_s"),
                self.inner_mb_s,
                self.outer_mb_s
            )));
        }
        self.active.check(&at("active"))?;
        self.idle.check(&at("idle"))?;
        self.standby.check(&at("standby"))?;
        let (a, i, s) = (self.active.watts(), self.idle.watts(), self.standby.watts());
        if s > i {
            return Err(ModelError(format!(
                "{}: standby {s} W is above idle {i} W, so spinning down would cost power",
                at("standby")
            )));
        }
        if i > a {
            return Err(ModelError(format!(
                "{}: idle {i} W is above active {a} W",
                at("idle")
            )));
        }
        if self.kind == Kind::Hdd && self.rpm == 0 {
            return Err(ModelError(format!("{} = 0 for a hard disk", at("rpm"))));
        }
        Ok(())
    }

    pub fn capacity_bytes(&self) -> u64 {
        (self.capacity_gb * 1e9) as u64
    }

    /// Seek time, s, over `d`, a fraction of the full stroke: 0 for no move, else √ growth
    /// from the track-to-track time to the average at a third of the stroke (the mean distance
    /// between two uniform random positions), then linear to the full stroke (Ruemmler and
    /// Wilkes' shape).
    pub fn seek_s(&self, d: f64) -> f64 {
        let d = d.clamp(0.0, 1.0);
        let ms = if d == 0.0 {
            0.0
        } else if d <= 1.0 / 3.0 {
            self.seek_track_ms + (self.seek_avg_ms - self.seek_track_ms) * (3.0 * d).sqrt()
        } else {
            self.seek_avg_ms + (self.seek_full_ms - self.seek_avg_ms) * (d - 1.0 / 3.0) * 1.5
        };
        ms / 1e3
    }

    /// Transfer rate at byte offset `lba`, B/s: falling linearly from the outer zone to the
    /// inner.
    pub fn rate_b_s(&self, lba: u64) -> f64 {
        let x = (lba as f64 / self.capacity_bytes() as f64).clamp(0.0, 1.0);
        (self.outer_mb_s + (self.inner_mb_s - self.outer_mb_s) * x) * 1e6
    }

    /// One revolution, s (0 for an SSD).
    pub fn revolution_s(&self) -> f64 {
        if self.rpm == 0 {
            0.0
        } else {
            60.0 / f64::from(self.rpm)
        }
    }

    /// What serving one request costs: overhead, the seek from `from` to `to`, `rotation`
    /// (0..1) of a revolution, and the transfer of `bytes` at `to`'s zone.
    pub fn charge(&self, from: u64, to: u64, bytes: u64, rotation: f64) -> Charge {
        let d = from.abs_diff(to) as f64 / self.capacity_bytes() as f64;
        Charge {
            overhead_s: self.overhead_ms / 1e3,
            seek_s: self.seek_s(d),
            rotation_s: rotation * self.revolution_s(),
            transfer_s: bytes as f64 / self.rate_b_s(to),
            slowdown_s: 0.0,
        }
    }

    /// One request's service time, s: [`Self::charge`] summed.
    pub fn service_s(&self, from: u64, to: u64, bytes: u64, rotation: f64) -> f64 {
        self.charge(from, to, bytes, rotation).total_s()
    }

    /// The idle time after which spinning down saves energy:
    /// `(E_down + E_up − P_standby·(t_down + t_up)) / (P_idle − P_standby)`, and at least the
    /// time the round trip takes. Infinite when standby saves nothing.
    pub fn break_even_s(&self) -> f64 {
        let (idle, standby) = (self.idle.watts(), self.standby.watts());
        let trip = self.spin_down_s + self.spin_up_s;
        if idle <= standby {
            return f64::INFINITY;
        }
        ((self.spin_down_j + self.spin_up_j - standby * trip) / (idle - standby)).max(trip)
    }
}
