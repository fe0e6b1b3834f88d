//! Engine work on a thread of its own, for callers that must stay responsive while it runs
//! (the Python bindings release the GIL and poll it): start it once, wait for it with a
//! timeout, then read what it produced. A thread that panics ends the job with the outcome the
//! caller gives for it instead of taking the caller down. Each engine's handle (a workload run,
//! a tree recreation) wraps one with its own progress and cancel.

use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often [`Job::wait`] looks whether the thread has ended.
const POLL: Duration = Duration::from_millis(5);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Job<O> {
    thread: Mutex<Option<JoinHandle<O>>>,
    outcome: Mutex<Option<O>>,
}

impl<O: Send + 'static> Default for Job<O> {
    fn default() -> Self {
        Self {
            thread: Mutex::new(None),
            outcome: Mutex::new(None),
        }
    }
}

impl<O: Send + 'static> Job<O> {
    /// Runs `work` on its own thread; false (and `work` dropped) if it was started before.
    pub fn start(&self, work: impl FnOnce() -> O + Send + 'static) -> bool {
        let mut thread = lock(&self.thread);
        if thread.is_some() || lock(&self.outcome).is_some() {
            return false;
        }
        *thread = Some(std::thread::spawn(work));
        true
    }

    /// Waits up to `timeout` for the work to end; true once it has (and its outcome is kept,
    /// `panicked()` standing in if the thread panicked). A job never started has not ended.
    pub fn wait(&self, timeout: Duration, panicked: impl FnOnce() -> O) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let mut thread = lock(&self.thread);
            match thread.as_ref() {
                None => return lock(&self.outcome).is_some(),
                Some(t) if t.is_finished() => {
                    let outcome = thread.take().expect("checked above").join();
                    *lock(&self.outcome) = Some(outcome.unwrap_or_else(|_| panicked()));
                    return true;
                }
                Some(_) => {}
            }
            drop(thread);
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            std::thread::sleep(POLL.min(deadline - now));
        }
    }

    /// What the ended work produced, given to `read`; `None` while it has not ended.
    pub fn with_outcome<R>(&self, read: impl FnOnce(&O) -> R) -> Option<R> {
        lock(&self.outcome).as_ref().map(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_once_and_keeps_its_outcome() {
        let job = Job::default();
        assert!(!job.wait(Duration::ZERO, || 0), "not started, not ended");
        assert!(job.start(|| 42));
        assert!(job.wait(Duration::from_secs(10), || 0));
        assert!(!job.start(|| 7), "a second start is refused");
        assert_eq!(job.with_outcome(|o| *o), Some(42));
    }

    #[test]
    fn a_panicking_thread_ends_with_the_stand_in_outcome() {
        let job: Job<i32> = Job::default();
        job.start(|| panic!("engine bug"));
        assert!(job.wait(Duration::from_secs(10), || -1));
        assert_eq!(job.with_outcome(|o| *o), Some(-1));
    }
}
