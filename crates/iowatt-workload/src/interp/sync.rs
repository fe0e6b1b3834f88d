//! Flowops that synchronise: with the disk (fsync, fsyncset) and with other threads
//! (semblock/sempost, block/wakeup).

use iowatt_metrics::now_ns;

use super::shared::Waiter;
use super::{last_errno, Interp, Step};

impl Interp<'_> {
    pub(super) fn fsync(&mut self, i: usize) -> Step {
        let slot = self.slot_of(&self.flowops[i]);
        let Some(fd) = self.slots[slot].fd else {
            return Step::Broken(format!("tried to fsync fd {slot}, which is not open"));
        };
        self.timed_fsync(i, fd)
    }

    pub(super) fn fsync_set(&mut self, i: usize) -> Step {
        let set = self.flowops[i].fileset;
        for s in 0..self.slots.len() {
            let slot = self.slots[s];
            let (Some(fd), Some((fs, _))) = (slot.fd, slot.entry) else {
                continue;
            };
            if Some(fs) != set {
                continue;
            }
            if let Step::Failed(errno) = self.timed_fsync(i, fd) {
                return Step::Failed(errno);
            }
        }
        Step::Ok
    }

    /// One fsync of `fd`, recorded as an operation of flowop `i`.
    fn timed_fsync(&mut self, i: usize, fd: i32) -> Step {
        let t0 = now_ns();
        // SAFETY: a valid fd.
        let res = unsafe { libc::fsync(fd) };
        let t1 = now_ns();
        if res < 0 {
            return Step::Failed(last_errno());
        }
        self.record(i, t0, t1, 0);
        Step::Ok
    }

    /// semblock and block: wait for this instance's semaphore or gate.
    pub(super) fn wait_own(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let waiter = self.waiters[i]
            .clone()
            .expect("every semblock/block has one");
        let t0 = now_ns();
        let stopping = || self.stopping();
        let woken = match waiter {
            Waiter::Sem(sem) => sem.block(f.value, &stopping),
            Waiter::Gate(gate) => gate.wait(&stopping),
        };
        if woken {
            self.record(i, t0, now_ns(), 0);
        }
        Step::Ok
    }

    pub(super) fn sem_post(&mut self, i: usize) -> Step {
        let f = &self.flowops[i];
        let Some(targets) = f.target.as_deref().and_then(|t| self.shared.sems.get(t)) else {
            return Step::Broken(format!("sempost target `{:?}` is no semblock", f.target));
        };
        let t0 = now_ns();
        for sem in targets {
            if !sem.post(f.value, f.blocking, &|| self.stopping()) {
                return Step::Ok;
            }
        }
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }

    pub(super) fn wakeup(&mut self, i: usize) -> Step {
        let t0 = now_ns();
        let target = self.flowops[i].target.as_deref().unwrap_or_default();
        for gate in self.shared.gates.get(target).into_iter().flatten() {
            gate.wake();
        }
        self.record(i, t0, now_ns(), 0);
        Step::Ok
    }
}
