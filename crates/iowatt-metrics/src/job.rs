//! Engine work on a thread of its own, for callers that must stay responsive while it runs
//! (the Python bindings release the GIL and poll it). An engine implements [`Work`] for its
//! checked input, declaring the progress it shares and the outcome it ends with; a [`Handle`]
//! then starts it once, cancels it, waits for it with a timeout and reads what it produced, the
//! same way for every engine. A thread that panics ends the work with the engine's stand-in
//! outcome instead of taking the caller down.

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often [`Job::wait`] looks whether the thread has ended.
const POLL: Duration = Duration::from_millis(5);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The thread of one piece of work and, once it has ended, its outcome.
struct Job<O> {
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
    fn start(&self, work: impl FnOnce() -> O + Send + 'static) -> bool {
        let mut thread = lock(&self.thread);
        if thread.is_some() || lock(&self.outcome).is_some() {
            return false;
        }
        *thread = Some(std::thread::spawn(work));
        true
    }

    /// Waits up to `timeout` for the work to end; true once it has (and its outcome is kept,
    /// `panicked()` standing in if the thread panicked). A job never started has not ended.
    fn wait(&self, timeout: Duration, panicked: impl FnOnce() -> O) -> bool {
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
    fn with_outcome<R>(&self, read: impl FnOnce(&O) -> R) -> Option<R> {
        lock(&self.outcome).as_ref().map(read)
    }
}

/// What a [`Handle`] runs: an engine's input, checked when it was built.
pub trait Work: Send + Sync + 'static {
    /// Shared with the caller while the work runs: what it has done so far, and the flag that
    /// stops it.
    type Progress: Default + Send + Sync + 'static;
    /// What the ended work produced: the engine's output, or its error.
    type Outcome: Send + 'static;

    /// Runs the work to its end, or until [`Work::cancel`]; on the handle's own thread. The
    /// work comes shared so an engine can hand it on to threads or tasks of its own.
    fn run(self: Arc<Self>, progress: &Self::Progress) -> Self::Outcome;

    /// Asks a run to stop early. It still ends with an outcome, the engine's choice: what it
    /// did so far, or an error saying it was interrupted.
    fn cancel(progress: &Self::Progress);

    /// The outcome of a run whose thread panicked: an engine bug, told to the caller as an
    /// error rather than taking it down.
    fn panicked() -> Self::Outcome;
}

/// One run of `W` on a thread of its own: start it, read its progress, cancel it, wait for it
/// with a timeout, then read what it produced.
pub struct Handle<W: Work> {
    work: Arc<W>,
    progress: Arc<W::Progress>,
    job: Job<W::Outcome>,
}

impl<W: Work> Handle<W> {
    /// A run of `work`, not started yet.
    pub fn new(work: W) -> Self {
        Self {
            work: Arc::new(work),
            progress: Arc::default(),
            job: Job::default(),
        }
    }

    pub fn work(&self) -> &W {
        &self.work
    }

    pub fn progress(&self) -> &W::Progress {
        &self.progress
    }

    /// Starts the run on its own thread; false if it was started before.
    pub fn start(&self) -> bool {
        let (work, progress) = (Arc::clone(&self.work), Arc::clone(&self.progress));
        self.job.start(move || work.run(&progress))
    }

    /// Asks the run to stop (see [`Work::cancel`]); it ends within one of the engine's steps.
    pub fn cancel(&self) {
        W::cancel(&self.progress);
    }

    /// Waits up to `timeout` for the run to end; true once it has (and its outcome is kept).
    /// A run never started has not ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.job.wait(timeout, W::panicked)
    }

    /// What the ended run produced, given to `read`; `None` while it has not ended.
    pub fn with_outcome<R>(&self, read: impl FnOnce(&W::Outcome) -> R) -> Option<R> {
        self.job.with_outcome(read)
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

    /// Counts until cancelled; a negative start panics.
    struct Count(i64);

    impl Work for Count {
        type Progress = std::sync::atomic::AtomicBool;
        type Outcome = Result<i64, String>;

        fn run(self: Arc<Self>, stop: &Self::Progress) -> Self::Outcome {
            assert!(self.0 >= 0, "engine bug");
            let mut n = self.0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(n)
        }

        fn cancel(stop: &Self::Progress) {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }

        fn panicked() -> Self::Outcome {
            Err("the engine panicked".into())
        }
    }

    #[test]
    fn a_handle_runs_its_work_once_until_cancelled() {
        let handle = Handle::new(Count(5));
        assert!(!handle.wait(Duration::ZERO), "not started, not ended");
        assert!(handle.with_outcome(|_| ()).is_none());
        assert!(handle.start());
        assert!(!handle.start(), "a second start is refused");
        assert!(
            !handle.wait(Duration::from_millis(20)),
            "runs until cancelled"
        );
        handle.cancel();
        assert!(handle.wait(Duration::from_secs(10)));
        assert!(handle.with_outcome(|o| *o.as_ref().unwrap() >= 5).unwrap());
        assert_eq!(handle.work().0, 5);
    }

    #[test]
    fn a_panicking_engine_ends_with_its_stand_in_outcome() {
        let handle = Handle::new(Count(-1));
        assert!(handle.start());
        assert!(handle.wait(Duration::from_secs(10)));
        assert_eq!(
            handle.with_outcome(Clone::clone),
            Some(Err("the engine panicked".into()))
        );
    }
}
