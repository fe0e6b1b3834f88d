//! A discrete-event schedule: a binary heap of (time, sequence) keys.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at_ns: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at_ns, self.seq) == (other.at_ns, other.seq)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed: the heap is a max-heap and the earliest event must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_ns, other.seq).cmp(&(self.at_ns, self.seq))
    }
}

/// Events of type `E` in time order (ties in scheduling order), and the simulated clock.
/// The heap's storage is kept between events: scheduling allocates only when more events are
/// pending than ever before.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    now_ns: u64,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<E> EventQueue<E> {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(n),
            now_ns: 0,
            seq: 0,
        }
    }

    /// The simulated time: that of the last event taken.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Schedules `event` `delay_ns` after now (saturating at the end of time).
    pub fn after(&mut self, delay_ns: u64, event: E) {
        self.at(self.now_ns.saturating_add(delay_ns), event);
    }

    /// Schedules `event` at `at_ns`; a time in the past is taken as now.
    pub fn at(&mut self, at_ns: u64, event: E) {
        self.heap.push(Entry {
            at_ns: at_ns.max(self.now_ns),
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }

    /// The next event, advancing the clock to it; None when nothing is scheduled.
    #[allow(clippy::should_implement_trait)] // not an Iterator: the caller schedules between
    pub fn next(&mut self) -> Option<(u64, E)> {
        let e = self.heap.pop()?;
        self.now_ns = e.at_ns;
        Some((e.at_ns, e.event))
    }

    /// When the next event is due; None when nothing is scheduled.
    pub fn next_at(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.at_ns)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_in_time_order_and_ties_in_scheduling_order() {
        let mut q = EventQueue::default();
        for (t, name) in [(30, "c"), (10, "a"), (30, "d"), (20, "b"), (10, "a2")] {
            q.at(t, name);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.next()).collect();
        assert_eq!(
            order,
            [(10, "a"), (10, "a2"), (20, "b"), (30, "c"), (30, "d")]
        );
        assert_eq!(q.now_ns(), 30);
        q.at(5, "late");
        assert_eq!(q.next(), Some((30, "late")), "the past is now");
    }
}
