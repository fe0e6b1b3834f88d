//! PARAID as published, LRU's spin budget, staggered spin-up and the file system's traffic,
//! against hand computation.

use iowatt_sim::raid::{
    simulate, Atime, DailyBudget, FsConfig, ParaidParams, Spec, Striping, Trace,
};
use iowatt_sim::Streams;

use super::raid::{array, close, model};

const S: u64 = 1_000_000_000;
const UNIT: u64 = 64 << 10;

/// Shifts down at the first look (1 s), with nothing to wait for.
fn eager() -> ParaidParams {
    ParaidParams {
        long_s: 1.0,
        min_dwell_s: 0.0,
        ..ParaidParams::default()
    }
}

#[test]
fn a_low_gear_request_pays_the_seek_to_its_replicas() {
    // Four units at offset 0 in the low gear of 2 of 4 disks: disk 0 serves its own unit at 0,
    // then disk 2's replica in the replica area; disk 1 likewise with disk 3's. A later read
    // at 1 GiB makes the data (and so the replica area's start) reach past it.
    let trace = Trace {
        t_ns: vec![10 * S, 20 * S],
        offset: vec![0, 1 << 30],
        bytes: vec![4 * UNIT, 4096],
        ..Trace::default()
    };
    let seed = 5;
    let run = simulate(&array(4), &Spec::Paraid(eager()), &trace, seed).unwrap();
    assert_eq!(run.gears, vec![(0, 4), (S, 2)]);
    // Replicas start after each disk's share of the data: 4,097 stripe rows.
    let base = 4097 * UNIT;
    let m = model();
    let disk = |d: u64| {
        let mut r = Streams::new(seed).stream(d);
        let own = m.service_s(0, 0, UNIT, r.unit());
        let replica = m.service_s(UNIT, base, UNIT, r.unit());
        own + replica
    };
    close(run.completion_ns[0] as f64 / 1e9, disk(0).max(disk(1)));
    // RAID-0 reads one unit a disk, with no second seek.
    let raid0 = simulate(&array(4), &Spec::Raid0, &trace, seed).unwrap();
    assert!(raid0.completion_ns[0] < run.completion_ns[0]);
}

#[test]
fn a_replica_unit_is_its_own_extent_on_the_disk_that_keeps_it() {
    let p = iowatt_sim::raid::Paraid::new(
        Striping {
            disks: 4,
            unit: UNIT,
        },
        ParaidParams {
            gears: vec![2, 4],
            ..eager()
        },
        1 << 30,
        27.0,
    );
    let mut p = p;
    let mut act = iowatt_sim::raid::Actions::default();
    use iowatt_sim::raid::Personality;
    p.monitor(S, &[0.0; 4], &mut act);
    assert_eq!(p.gear(), Some(2));
    let mut out = Vec::new();
    p.route(0, 8 * UNIT, false, &mut out);
    let on = |d: usize| {
        out.iter()
            .filter(|e| e.disk == d)
            .map(|e| (e.offset, e.bytes))
            .collect::<Vec<_>>()
    };
    // Two rows: disk 0's own units 0 and 4 are contiguous on it, and so are the replicas of
    // disk 2's units 2 and 6.
    assert_eq!(on(0), vec![(0, 2 * UNIT), (1 << 30, 2 * UNIT)]);
    assert_eq!(on(1), vec![(0, 2 * UNIT), (1 << 30, 2 * UNIT)]);
    assert!(on(2).is_empty() && on(3).is_empty());
}

#[test]
fn a_top_gear_write_burst_is_copied_to_the_replicas_before_the_down_shift() {
    // Ten 256 KiB writes in the top gear (the dwell keeps it there for 20 s), then quiet:
    // the down-shift first copies disks 2 and 3's 640 KiB each to the replicas on 0 and 1.
    let dwell = ParaidParams {
        min_dwell_s: 20.0,
        ..eager()
    };
    let mut trace = Trace::default();
    for k in 0..10 {
        trace.t_ns.push(S + k * S / 10);
        trace.offset.push(k * 4 * UNIT);
        trace.bytes.push(4 * UNIT);
        trace.write.push(true);
    }
    trace.t_ns.push(100 * S);
    trace.offset.push(0);
    trace.bytes.push(4096);
    trace.write.push(false);
    let run = simulate(&array(4), &Spec::Paraid(dwell.clone()), &trace, 3).unwrap();
    assert_eq!(run.gears, vec![(0, 4), (20 * S, 2)]);
    assert_eq!(run.synced_bytes, 2 * 10 * UNIT);
    // The same burst read leaves nothing to copy: disks 2 and 3 go down at once, and spend
    // less than when they first read 640 KiB each.
    trace.write.iter_mut().for_each(|w| *w = false);
    let reads = simulate(&array(4), &Spec::Paraid(dwell), &trace, 3).unwrap();
    assert_eq!(reads.synced_bytes, 0);
    let copy_s = 10.0 * UNIT as f64 / 100e6;
    for d in [2, 3] {
        let extra = run.energy_j[d] - reads.energy_j[d];
        // At least the transfer's time at (active − standby) watts, the copy delaying the
        // spin-down.
        assert!(extra > copy_s * (12.0 - 2.0), "disk {d}: {extra} J");
    }
}

#[test]
fn a_daily_budget_of_b_spin_downs_allows_its_floor_in_any_day() {
    for (b, allowed) in [(3.0, 3), (27.4, 27), (0.0, 0)] {
        let mut budget = DailyBudget::new(Some(b), 1);
        let mut n = 0;
        while budget.allows(3600 * S, 0) && n < 100 {
            budget.spend(3600 * S, 0);
            n += 1;
        }
        assert_eq!(n, allowed, "budget {b}");
        assert_eq!(budget.allows(86_400 * S, 0), allowed > 0, "a new day");
    }
    assert!(DailyBudget::new(None, 1).allows(0, 0));
}

#[test]
fn lru_with_a_budget_spins_down_at_most_its_floor_each_day() {
    // A read every minute for two days: LRU (1 s timeout) would spin down after each.
    let mut trace = Trace::default();
    for k in 0..2 * 1440u64 {
        trace.t_ns.push(k * 60 * S);
        trace.offset.push(0);
        trace.bytes.push(4096);
    }
    let lru = |cycles_per_day| Spec::Lru {
        timeout_s: Some(1.0),
        cycles_per_day,
    };
    for (b, allowed) in [(3.0, 3), (27.4, 27)] {
        let run = simulate(&array(1), &lru(Some(b)), &trace, 1).unwrap();
        assert_eq!(run.most_cycles_a_day, vec![allowed], "budget {b}");
        assert_eq!(run.spin_cycles, vec![2 * allowed], "two days");
    }
    let free = simulate(&array(1), &lru(None), &trace, 1).unwrap();
    assert_eq!(free.spin_cycles, vec![2 * 1440 - 1]);
}

#[test]
fn staggered_spin_ups_leave_the_last_of_four_disks_three_staggers_late() {
    // All four disks asleep (1 s timeout, 30 s of quiet); a 256 KiB read wakes them together.
    let trace = Trace {
        t_ns: vec![0, 30 * S],
        offset: vec![0, 0],
        bytes: vec![4 * UNIT, 4 * UNIT],
        ..Trace::default()
    };
    let lru = Spec::Lru {
        timeout_s: Some(1.0),
        cycles_per_day: None,
    };
    let mut a = array(4);
    let free = simulate(&a, &lru, &trace, 3).unwrap();
    a.spinup_stagger_s = 4.0;
    let staggered = simulate(&a, &lru, &trace, 3).unwrap();
    let (f, s) = (
        free.completion_ns[1] as f64 / 1e9,
        staggered.completion_ns[1] as f64 / 1e9,
    );
    // Spin-up (6 s) plus the slowest service, then 3 × 4 s more for the last disk.
    assert!((6.0..6.1).contains(&f), "{f}");
    assert!((18.0..18.1).contains(&s), "{s}");
    // The first disk was up 12 s sooner: its first byte came after one spin-up.
    let first = staggered.latency_ns[1] as f64 / 1e9;
    assert!((6.0..6.1).contains(&first), "{first}");
    // Waiting its turn in standby costs standby power, not a spin-up's.
    let (ef, es): (f64, f64) = (free.energy_j.iter().sum(), staggered.energy_j.iter().sum());
    assert!(es > ef, "the later disks idle longer once up");
}

fn fs(atime: Atime) -> FsConfig {
    FsConfig {
        atime,
        writeback_s: 5.0,
        expire_s: 30.0,
        journal: false,
        commit_s: 5.0,
        journal_offset: 0,
        journal_bytes: 0,
        metadata_cache_bytes: 1 << 20,
    }
}

#[test]
fn a_file_read_first_reads_its_metadata_and_dirties_its_inode() {
    // One 4 KiB file read at 1 s and again (cached metadata) at 2 s; its directory block at
    // 1 GB and inode block at 1 GB + 8 KiB, both on disk 0 of one.
    let trace = Trace {
        t_ns: vec![S, 2 * S],
        offset: vec![0, 0],
        bytes: vec![4096, 4096],
        dir_at: vec![1 << 30, 1 << 30],
        inode_at: vec![(1 << 30) + 8192, (1 << 30) + 8192],
        ..Trace::default()
    };
    let mut a = array(1);
    a.fs = Some(fs(Atime::Strict));
    let seed = 2;
    let run = simulate(&a, &Spec::Raid0, &trace, seed).unwrap();
    let m = model();
    let mut r = Streams::new(seed).stream(0);
    let dir = m.service_s(0, 1 << 30, 4096, r.unit());
    let inode = m.service_s((1 << 30) + 4096, (1 << 30) + 8192, 4096, r.unit());
    let data = m.service_s((1 << 30) + 12288, 0, 4096, r.unit());
    close(run.completion_ns[0] as f64 / 1e9, dir + inode + data);
    assert_eq!(run.fs_reads, 2);
    // The second read finds its metadata cached: data only.
    let again = m.service_s(4096, 0, 4096, r.unit());
    close(run.completion_ns[1] as f64 / 1e9, again);
    // The trace ends before the inode's 30 s: no write yet.
    assert_eq!(run.fs_writes, 0);
    // Without the model (a block trace), only the data.
    let plain = simulate(&array(1), &Spec::Raid0, &trace, seed).unwrap();
    assert_eq!(plain.fs_reads, 0);
    assert!(plain.completion_ns[0] < run.completion_ns[0]);
}

#[test]
fn access_times_keep_an_lru_disk_spinning_that_would_otherwise_sleep() {
    // A read every 20 s for ten minutes, all from the page cache after the first: with
    // noatime the disk idles past its 10 s timeout after each; with strict atime, every read
    // dirties the inode, written every 5 s once 30 s old — the disk spins down less.
    let n = 30;
    let trace = Trace {
        t_ns: (0..n).map(|k| k * 20 * S).collect(),
        offset: vec![0; n as usize],
        bytes: vec![4096; n as usize],
        dir_at: vec![1 << 30; n as usize],
        inode_at: vec![(1 << 30) + 8192; n as usize],
        ..Trace::default()
    };
    let lru = Spec::Lru {
        timeout_s: Some(10.0),
        cycles_per_day: None,
    };
    let mut a = array(1);
    a.cache_bytes = 1 << 20;
    a.fs = Some(fs(Atime::Noatime));
    let quiet = simulate(&a, &lru, &trace, 1).unwrap();
    a.fs = Some(fs(Atime::Strict));
    let atime = simulate(&a, &lru, &trace, 1).unwrap();
    assert_eq!(quiet.fs_writes, 0);
    assert!(atime.fs_writes > 10, "{}", atime.fs_writes);
    assert_eq!(quiet.spin_cycles, vec![1], "once, after the first read");
    assert!(atime.spin_cycles[0] > quiet.spin_cycles[0]);
}

#[test]
fn a_read_passes_the_flusher_s_writes_queued_before_it() {
    // 200 files read in the first second dirty 200 inode blocks; the flusher writes them all
    // at 35 s (30 s old). A read just after waits for the write in service, not for 200.
    let n = 200u64;
    let mut trace = Trace::default();
    for k in 0..n {
        trace.t_ns.push(k * S / n);
        trace.offset.push(k * (1 << 20));
        trace.bytes.push(4096);
        trace.dir_at.push(u64::MAX);
        trace.inode_at.push((2 << 30) + k * (1 << 20));
    }
    trace.t_ns.push(35 * S + 1_000_000);
    trace.offset.push(0);
    trace.bytes.push(4096);
    trace.dir_at.push(u64::MAX);
    trace.inode_at.push(2 << 30);
    let mut a = array(1);
    a.fs = Some(fs(Atime::Strict));
    let run = simulate(&a, &Spec::Raid0, &trace, 1).unwrap();
    assert_eq!(run.fs_writes, n);
    let last = *run.completion_ns.last().unwrap() as f64 / 1e9;
    // One write's service and its own: a full seek (10 ms) and a turn (10 ms) each at most.
    assert!(last < 0.05, "{last} s behind the writes");
}

#[test]
fn an_array_fed_request_by_request_answers_as_the_simulator_does() {
    // What the emulated array does with a mount's requests: each arrives when it comes, and
    // the array is served up to each next event; the answers are the simulator's.
    use iowatt_sim::raid::{build, Request};
    let n = 500u64;
    let trace = Trace {
        t_ns: (0..n).map(|i| i * 37_000_000).collect(),
        offset: (0..n).map(|i| (i * 7919 % 1000) * (1 << 20)).collect(),
        bytes: (0..n).map(|i| 4096 * (1 + i % 40)).collect(),
        write: (0..n).map(|i| i % 7 == 0).collect(),
        ..Trace::default()
    };
    let lru = Spec::Lru {
        timeout_s: Some(1.0),
        cycles_per_day: None,
    };
    for spec in [Spec::Raid0, lru, Spec::Paraid(eager())] {
        let want = simulate(&array(4), &spec, &trace, 9).unwrap();
        // The data's extent, which places PARAID's replicas.
        let used = (0..n as usize)
            .map(|i| trace.offset[i] + trace.bytes[i])
            .max()
            .unwrap();
        let mut a = build(&array(4), &spec, used, 9, false).unwrap();
        a.start();
        let mut latency = vec![0; n as usize];
        for i in 0..n as usize {
            a.arrive(
                trace.t_ns[i],
                Request {
                    tag: i as u64,
                    offset: trace.offset[i],
                    bytes: trace.bytes[i],
                    write: trace.write[i],
                    dir_at: u64::MAX,
                    inode_at: u64::MAX,
                },
            );
            for c in a.take_completions() {
                latency[c.tag as usize] = c.done_ns - c.arrived_ns;
            }
        }
        while a.pending() > 0 {
            let next = a.next_event_ns().expect("work queued");
            a.advance_to(next);
            for c in a.take_completions() {
                latency[c.tag as usize] = c.done_ns - c.arrived_ns;
            }
        }
        assert_eq!(latency, want.completion_ns, "{}", spec.name());
    }
}

#[test]
fn a_lookup_reads_the_metadata_not_cached_and_no_data_or_access_time() {
    // The emulated array's FUSE lookup: a request of 0 bytes naming a file's metadata blocks.
    use iowatt_sim::raid::{build, Request};
    let mut a = array(1);
    a.fs = Some(FsConfig {
        writeback_s: 1.0,
        expire_s: 1.0,
        ..fs(Atime::Strict)
    });
    let seed = 4;
    let mut array = build(&a, &Spec::Raid0, 1 << 20, seed, true).unwrap();
    array.start();
    let lookup = |tag| Request {
        tag,
        offset: 0,
        bytes: 0,
        write: false,
        dir_at: 1 << 30,
        inode_at: (1 << 30) + 8192,
    };
    array.arrive(S, lookup(0));
    assert!(
        array.take_completions().is_empty(),
        "waits for its metadata"
    );
    array.advance_to(2 * S);
    let done = array.take_completions();
    assert_eq!(done.len(), 1);
    let first = done[0];
    let m = model();
    let mut r = Streams::new(seed).stream(0);
    let dir = m.service_s(0, 1 << 30, 4096, r.unit());
    let inode = m.service_s((1 << 30) + 4096, (1 << 30) + 8192, 4096, r.unit());
    close((first.done_ns - first.arrived_ns) as f64 / 1e9, dir + inode);
    // Looked up again: both blocks cached, answered at once.
    array.arrive(3 * S, lookup(1));
    let again = array.take_completions();
    assert_eq!((again.len(), again[0].done_ns), (1, 3 * S));
    // No access time was set: the flusher, long past the expiry, writes nothing.
    array.advance_to(10 * S);
    assert_eq!(array.fs_blocks(), (2, 0));
}
