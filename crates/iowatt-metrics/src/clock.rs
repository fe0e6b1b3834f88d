//! The one clock every sample is stamped with.
//!
//! CLOCK_MONOTONIC is what Python's `time.monotonic_ns()` reads too, so power samples taken on
//! the Python side and interval samples taken here share a time axis without conversion.

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds on CLOCK_REALTIME (since the Unix epoch): the clock hosts share, for an instant
/// given to several of them (a fleet's common start).
#[inline]
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_never_goes_backwards() {
        let mut last = now_ns();
        for _ in 0..10_000 {
            let t = now_ns();
            assert!(t >= last);
            last = t;
        }
    }
}
