//! Merges the workers' interval contributions into one row per interval. An interval is final
//! once every worker has moved past it, so a worker stuck in a slow I/O delays the row rather
//! than losing its share. Memory holds only the intervals not yet final.

use std::collections::BTreeMap;

use iowatt_metrics::{IntervalAccum, IntervalRow};

use crate::recorder::IntervalMsg;

pub struct Collector {
    interval_ns: u64,
    slow_ns: Vec<u64>,
    heat_ns: Vec<u64>,
    /// Highest interval index each worker has handed over, i.e. moved past; `None` until its
    /// first message.
    reported: Vec<Option<u64>>,
    finished: Vec<bool>,
    pending: BTreeMap<u64, IntervalAccum>,
    pub rows: Vec<IntervalRow>,
}

impl Collector {
    pub fn new(workers: usize, interval_ns: u64, slow_ns: Vec<u64>, heat_ns: Vec<u64>) -> Self {
        Self {
            interval_ns,
            slow_ns,
            heat_ns,
            reported: vec![None; workers],
            finished: vec![false; workers],
            pending: BTreeMap::new(),
            rows: Vec::new(),
        }
    }

    pub fn add(&mut self, msg: IntervalMsg) {
        self.pending.entry(msg.index).or_default().merge(&msg.accum);
        self.reported[msg.worker] = Some(msg.index);
        self.finished[msg.worker] |= msg.last;
        // Once every worker has finished, only `finish` knows how long the last interval was.
        let settled = self.settled();
        if settled != u64::MAX {
            self.finalize_through(settled);
        }
    }

    /// Intervals strictly below this index can no longer change.
    fn settled(&self) -> u64 {
        self.reported
            .iter()
            .zip(&self.finished)
            .map(|(r, &done)| match (r, done) {
                (_, true) => u64::MAX,
                (Some(i), false) => i + 1,
                (None, false) => 0,
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    fn finalize_through(&mut self, below: u64) {
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() >= below {
                break;
            }
            let (index, accum) = entry.remove_entry();
            self.push_row(index, &accum, self.interval_ns);
        }
    }

    fn push_row(&mut self, index: u64, accum: &IntervalAccum, duration_ns: u64) {
        // Intervals nobody completed anything in still get a row: a stalled second is data.
        let next = self.rows.len() as u64;
        for empty in next..index {
            let t = empty * self.interval_ns;
            self.rows.push(IntervalAccum::default().to_row(
                t,
                self.interval_ns,
                &self.slow_ns,
                &self.heat_ns,
            ));
        }
        self.rows.push(accum.to_row(
            index * self.interval_ns,
            duration_ns,
            &self.slow_ns,
            &self.heat_ns,
        ));
    }

    /// Final rows for a measured phase of `measured_ns`; the last interval may be short.
    pub fn finish(mut self, measured_ns: u64) -> Vec<IntervalRow> {
        let full = measured_ns / self.interval_ns;
        let partial = measured_ns % self.interval_ns;
        let pending = std::mem::take(&mut self.pending);
        for (index, accum) in pending {
            // Operations completing after the window are not measured; drop them.
            if index < full {
                self.push_row(index, &accum, self.interval_ns);
            } else if index == full && partial > 0 {
                self.push_row(index, &accum, partial);
            }
        }
        let wanted = full + u64::from(partial > 0);
        while (self.rows.len() as u64) < wanted {
            let index = self.rows.len() as u64;
            let duration = if index == full {
                partial
            } else {
                self.interval_ns
            };
            self.rows.push(IntervalAccum::default().to_row(
                index * self.interval_ns,
                duration,
                &self.slow_ns,
                &self.heat_ns,
            ));
        }
        self.rows.truncate(wanted as usize);
        if partial > 0 {
            if let Some(last) = self.rows.last_mut() {
                last.duration_ns = partial;
            }
        }
        self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(worker: usize, index: u64, ops: u64, last: bool) -> IntervalMsg {
        let mut accum = IntervalAccum {
            ops,
            ..Default::default()
        };
        for _ in 0..ops {
            accum.hist.record(1000);
        }
        IntervalMsg {
            worker,
            index,
            accum,
            last,
        }
    }

    #[test]
    fn an_interval_waits_for_every_worker_then_merges() {
        let mut c = Collector::new(2, 10, vec![], vec![]);
        c.add(msg(0, 0, 5, false));
        c.add(msg(0, 1, 5, false));
        assert!(c.rows.is_empty(), "worker 1 has not reported interval 0");
        c.add(msg(1, 0, 3, false));
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].ops, 8);
    }

    #[test]
    fn quiet_intervals_become_empty_rows_and_late_ops_are_dropped() {
        let mut c = Collector::new(1, 10, vec![], vec![]);
        c.add(msg(0, 0, 2, false));
        c.add(msg(0, 3, 4, false));
        c.add(msg(0, 5, 9, true));
        let rows = c.finish(45);
        let ops: Vec<u64> = rows.iter().map(|r| r.ops).collect();
        assert_eq!(ops, [2, 0, 0, 4, 0]);
        assert_eq!(rows[4].duration_ns, 5);
    }
}
