//! Flowops that pace or end a thread: event, ops, iops and bandwidth limits fed by the event
//! generator, delays and CPU work, and finishoncount / finishonbytes.

use std::sync::atomic::Ordering::Relaxed;

use iowatt_metrics::now_ns;

use super::shared::Counts;
use super::{Interp, Step, MB};
use crate::spec::{Flowop, OpKind};
use crate::sync::sleep_until;

impl Interp<'_> {
    pub(super) fn take_events(&mut self, i: usize, n: u64) -> Step {
        let Some(events) = &self.shared.events else {
            return Step::Ok; // without an event generator, limits are no-ops (as in FileBench)
        };
        let t0 = now_ns();
        if events.take(n, &|| self.stopping()) {
            self.record(i, t0, now_ns(), 0);
        }
        Step::Ok
    }

    /// The count a limit or finish flowop watches: its target's, or the whole run's.
    pub(super) fn watched(&self, f: &Flowop, bytes: bool, rw_only: bool) -> u64 {
        let pick = |c: &Counts| {
            if bytes {
                c.bytes.load(Relaxed)
            } else {
                c.ops.load(Relaxed)
            }
        };
        match f.target.as_deref().and_then(|t| self.shared.ids.get(t)) {
            Some(ids) => ids
                .iter()
                .map(|&id| pick(&self.shared.per_flowop[id]))
                .sum(),
            None if rw_only => pick(&self.shared.rw),
            None => pick(&self.shared.io),
        }
    }

    /// opslimit / iopslimit / bwlimit: a token bucket drained by the watched count and refilled
    /// from the event generator (one event per op, or per MiB for bwlimit).
    pub(super) fn limit(&mut self, i: usize) -> Step {
        if self.shared.events.is_none() {
            return Step::Ok;
        }
        let f = &self.flowops[i];
        let bw = f.kind == OpKind::BwLimit;
        let now = self.watched(f, bw, f.kind != OpKind::OpsLimit);
        let b = &mut self.buckets[i];
        let Some(last) = b.last.replace(now) else {
            return Step::Ok;
        };
        b.level -= (now - last) as i64;
        if b.level >= 0 {
            return Step::Ok;
        }
        let owed = (-b.level) as u64;
        let (events, refill) = if bw {
            (owed / MB + 1, (owed / MB + 1) * MB)
        } else {
            (owed, owed)
        };
        b.level += refill as i64;
        self.take_events(i, events)
    }

    pub(super) fn finish_on(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let t0 = now_ns();
        let reached = if f.kind == OpKind::FinishOnCount {
            self.watched(f, false, false) >= f.value
        } else {
            self.watched(f, true, false) > f.value
        };
        self.record(i, t0, now_ns(), 0);
        if reached {
            Step::Finished
        } else {
            Step::Ok
        }
    }

    /// hog: burn CPU touching memory `value` times.
    pub(super) fn hog(&mut self, i: usize) -> Step {
        let t0 = now_ns();
        // FileBench's hog is `value` one-byte stores through a pointer its compiler must
        // reload each time (a `char *` may alias it). The same load and store here make a unit
        // of hog cost what it costs there (0.28 ns on the reference VM), so hog-heavy files
        // such as oltp compare equal work; a black_box per store cost twice as much.
        let mut mem = self.buf.as_mut_ptr();
        let at: *mut *mut u8 = &mut mem;
        for _ in 0..self.flowops[i].value {
            // SAFETY: `at` points at `mem`, a pointer into the thread's buffer (never empty).
            unsafe { at.read_volatile().write_volatile(1) };
        }
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }

    /// delay: sleep `value` seconds (cut short when the run ends).
    pub(super) fn delay(&mut self, i: usize) -> Step {
        let t0 = now_ns();
        let until = t0 + self.flowops[i].value.saturating_mul(1_000_000_000);
        sleep_until(until, &|| self.stopping());
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }
}
