//! The emulated disk mounted for real (FUSE, as root or through fusermount3): data passes
//! through unchanged, and each request is charged exactly what the shared disk model gives for
//! its offsets and the seeded rotation, in FIFO order, with power states and their energy.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use iowatt_emulate::{Discipline, Options, Served, Vibration};
use iowatt_sim::disk::{DiskModel, State};
use iowatt_sim::Streams;

mod common;

use common::{shipped, Mounted};

impl Mounted {
    fn new(tag: &str, model: DiskModel, spin_down: Option<Duration>) -> Self {
        Self::with(tag, model, spin_down, None)
    }

    fn with(
        tag: &str,
        model: DiskModel,
        spin_down: Option<Duration>,
        vibration: Option<Vibration>,
    ) -> Self {
        Self::full(tag, model, spin_down, vibration, Discipline::Fifo)
    }

    fn full(
        tag: &str,
        model: DiskModel,
        spin_down: Option<Duration>,
        vibration: Option<Vibration>,
        discipline: Discipline,
    ) -> Self {
        let (root, backing, mount) = Mounted::dirs(tag);
        let options = Options {
            backing,
            mount,
            model,
            spin_down,
            seed: 3,
            page_cache: false,
            discipline,
            vibration,
            array: None,
            settings: "{}".into(),
        };
        Mounted::start(root, options)
    }
}

/// Each request's charge is the model's for its offsets from the head, with the rotation drawn
/// from the seed's stream in serving order; each starts when the one before it finished, or
/// when it arrived at an idle disk.
fn assert_charged_by_the_model(served: &[Served], model: &DiskModel, seed: u64) {
    let mut rng = Streams::new(seed).stream(0);
    let mut head = 0;
    let mut free_at = 0;
    for (i, s) in served.iter().enumerate() {
        let mut want = model.charge(head, s.offset, s.bytes, rng.unit());
        want.slowdown_s = s.charge.slowdown_s;
        assert_eq!(s.charge, want, "request {i}");
        assert_eq!(
            s.started_ns,
            s.arrived_ns.max(free_at),
            "request {i} waited its turn"
        );
        assert_eq!(
            s.done_ns - s.started_ns,
            (want.total_s() * 1e9).round() as u64,
            "request {i}"
        );
        head = s.offset + s.bytes;
        free_at = s.done_ns;
    }
}

fn mounted(path: &Path) -> bool {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(path.to_str().unwrap())
}

#[test]
fn data_passes_through_and_every_request_is_charged_the_model_s_service_time() {
    let model = shipped("ultrastar-36z15");
    let m = Mounted::new("charge", model.clone(), None);
    assert!(mounted(&m.mount));
    let data: Vec<u8> = (0..256 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(m.mount.join("f"), &data).unwrap();
    assert_eq!(
        fs::read(m.backing.join("f")).unwrap(),
        data,
        "written through"
    );
    let f = fs::File::open(m.mount.join("f")).unwrap();
    let mut buf = vec![0u8; 4096];
    for k in [3u64, 50, 7, 33] {
        f.read_exact_at(&mut buf, k * 4096).unwrap();
        assert_eq!(buf, data[(k * 4096) as usize..][..4096], "block {k}");
    }
    // The control directory is reachable, never listed.
    let names: Vec<_> = fs::read_dir(&m.mount)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["f"]);
    let ops: usize = m.control("ops").trim().parse().unwrap();
    let record = m.stop();
    assert_eq!(ops, record.served.len(), "the counter counts every request");
    let reads: Vec<_> = record.served.iter().filter(|s| !s.write).collect();
    assert_eq!(reads.len(), 4);
    assert!(record.served.iter().all(|s| !s.drained));
    assert_charged_by_the_model(&record.served, &model, 3);
    // Idle, then busy in turns: the energy is each state's watts times its time.
    let c = &record.counters;
    let want: f64 = State::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| s.watts(&model) * c.state_ns[i] as f64 / 1e9)
        .sum();
    assert!(
        (c.energy_j - want).abs() < 1e-6,
        "{} J against {want} J",
        c.energy_j
    );
}

#[test]
fn concurrent_requests_are_served_one_at_a_time_in_arrival_order() {
    let model = shipped("ultrastar-36z15");
    let m = Mounted::new("fifo", model.clone(), None);
    fs::write(m.mount.join("f"), vec![1u8; 1 << 20]).unwrap();
    let path = Arc::new(m.mount.join("f"));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let f = fs::File::open(&*path).unwrap();
                let mut buf = vec![0u8; 4096];
                for k in 0..4 {
                    f.read_exact_at(&mut buf, ((t * 31 + k * 17) % 256) * 4096)
                        .unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let record = m.stop();
    assert_eq!(record.served.iter().filter(|s| !s.write).count(), 32);
    assert_charged_by_the_model(&record.served, &model, 3);
    assert!(
        record.served.iter().any(|s| s.started_ns > s.arrived_ns),
        "some requests queued behind others"
    );
}

#[test]
fn an_idle_disk_spins_down_and_the_next_read_pays_the_spin_up() {
    let mut model = shipped("ultrastar-36z15");
    // Short spins keep the test quick; the accounting is the same at any length.
    (model.spin_down_s, model.spin_up_s) = (0.05, 0.2);
    let m = Mounted::new("spin", model.clone(), Some(Duration::from_millis(100)));
    fs::write(m.backing.join("f"), vec![2u8; 8192]).unwrap();
    m.until("standby", |m| m.control("state").trim() == "standby");
    assert_eq!(m.control("cycles").trim(), "1");
    let mut buf = vec![0u8; 4096];
    fs::File::open(m.mount.join("f"))
        .unwrap()
        .read_exact_at(&mut buf, 0)
        .unwrap();
    let record = m.stop();
    let read = &record.served[0];
    let changes: Vec<State> = record.changes.iter().map(|c| c.state).collect();
    assert_eq!(
        changes[..5],
        [
            State::Idle,
            State::SpinningDown,
            State::Standby,
            State::SpinningUp,
            State::Busy
        ]
    );
    let up = record.changes[3].t_ns;
    assert_eq!(up, read.arrived_ns, "the read woke the disk");
    assert_eq!(
        read.started_ns - read.arrived_ns,
        (model.spin_up_s * 1e9).round() as u64,
        "and waited for it to spin up"
    );
    assert_eq!(record.counters.cycles, 1);
}

fn half_speed_curve() -> Vibration {
    // A fan curve: full speed up to 40 % PWM, half at 100 %, stalled at 60 % (a resonance).
    Vibration {
        curve: vec![
            (0.0, 1.0),
            (40.0, 1.0),
            (60.0, 0.0),
            (80.0, 0.5),
            (100.0, 0.5),
        ],
        at: 0.0,
        stall_cap: Duration::from_millis(300),
        tails: Vec::new(),
    }
}

fn read_block(m: &Mounted, k: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; 4096];
    fs::File::open(m.mount.join("f"))?.read_exact_at(&mut buf, k * 4096)
}

#[test]
fn each_request_is_slowed_by_the_curve_at_the_stimulus_in_force_when_it_started() {
    let model = shipped("ultrastar-36z15");
    let m = Mounted::with("vib", model.clone(), None, Some(half_speed_curve()));
    fs::write(m.backing.join("f"), vec![3u8; 1 << 20]).unwrap();
    read_block(&m, 1).unwrap();
    fs::write(m.mount.join(".iowatt/stimulus"), "100\n").unwrap();
    assert_eq!(m.control("speed").trim(), "0.5");
    read_block(&m, 100).unwrap();
    fs::write(m.mount.join(".iowatt/stimulus"), "90").unwrap();
    read_block(&m, 50).unwrap();
    // Outside the curve: refused, nothing changed.
    let err = fs::write(m.mount.join(".iowatt/stimulus"), "120").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ERANGE));
    let record = m.stop();
    assert_charged_by_the_model(&record.served, &model, 3);
    let speeds: Vec<f64> = record.stimuli.iter().map(|s| s.speed).collect();
    assert_eq!(speeds, [1.0, 0.5, 0.5]);
    for (s, r) in record.served.iter().zip([1.0, 0.5, 0.5]) {
        let model_s = s.charge.model_s();
        assert!(
            (s.charge.total_s() - model_s / r).abs() < 1e-12,
            "{s:?} at {r}"
        );
    }
}

#[test]
fn a_stall_holds_requests_until_the_speed_returns_or_fails_them_at_the_cap() {
    let model = shipped("ultrastar-36z15");
    let mut curve = half_speed_curve();
    curve.at = 60.0;
    let m = Arc::new(Mounted::with("stall", model, None, Some(curve)));
    fs::write(m.backing.join("f"), vec![4u8; 1 << 20]).unwrap();
    // Held past the cap: EIO.
    let err = read_block(&m, 2).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    // Held, then released when the fans move off the resonance.
    let reader = {
        let m = m.clone();
        std::thread::spawn(move || read_block(&m, 3))
    };
    m.until("a held request", |m| m.control("queue").trim() == "1");
    fs::write(m.mount.join(".iowatt/stimulus"), "0").unwrap();
    reader.join().unwrap().unwrap();
    let record = Arc::try_unwrap(m).ok().expect("the reader is done").stop();
    let (failed, served): (Vec<_>, Vec<_>) = record.served.iter().partition(|s| s.failed);
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].done_ns - failed[0].arrived_ns,
        300_000_000,
        "failed at the cap"
    );
    assert_eq!(served.len(), 1);
    let release = record.stimuli[1].t_ns;
    assert_eq!(served[0].started_ns, release, "served once the stall ended");
    assert_eq!(record.counters.failed, 1);
}

/// Two threads reading their own halves of a file at once; how often the disk switched from
/// one thread's requests to the other's, and each thread's requests served.
fn two_streams(discipline: Discipline) -> (usize, Vec<u32>) {
    let model = shipped("ultrastar-36z15");
    let m = Arc::new(Mounted::full("streams", model, None, None, discipline));
    fs::write(m.backing.join("f"), vec![5u8; 8 << 20]).unwrap();
    let readers: Vec<_> = (0..2u64)
        .map(|half| {
            let m = m.clone();
            std::thread::spawn(move || {
                let f = fs::File::open(m.mount.join("f")).unwrap();
                let mut buf = vec![0u8; 4096];
                for k in 0..30 {
                    f.read_exact_at(&mut buf, half * (4 << 20) + k * 65536)
                        .unwrap();
                }
            })
        })
        .collect();
    readers.into_iter().for_each(|t| t.join().unwrap());
    let record = Arc::try_unwrap(m)
        .ok()
        .expect("the readers are done")
        .stop();
    let streams: Vec<u32> = record
        .served
        .iter()
        .filter(|s| !s.write)
        .map(|s| s.stream)
        .collect();
    let switches = streams.windows(2).filter(|w| w[0] != w[1]).count();
    (switches, streams)
}

#[test]
fn cfq_gives_each_process_its_slice_where_fifo_interleaves_them() {
    let (fifo, streams) = two_streams(Discipline::Fifo);
    assert_eq!(streams.len(), 60);
    let (cfq, streams) = two_streams(Discipline::Cfq {
        slice_ns: 100_000_000,
        idle_ns: 8_000_000,
    });
    assert_eq!(streams.len(), 60);
    // 30 reads of a few ms each fill about two slices per thread.
    assert!(cfq <= 8, "CFQ switched streams {cfq} times: {streams:?}");
    assert!(fifo > 3 * cfq, "FIFO switched {fifo} times, CFQ {cfq}");
}

#[test]
fn with_tails_each_added_time_is_scaled_by_a_seeded_draw_from_the_step_s_quantiles() {
    let model = shipped("ultrastar-36z15");
    let mut curve = half_speed_curve();
    curve.at = 100.0;
    curve.tails = vec![(100.0, vec![0.0, 2.0])];
    let m = Mounted::with("tails", model.clone(), None, Some(curve));
    fs::write(m.backing.join("f"), vec![6u8; 1 << 20]).unwrap();
    for k in 0..8 {
        read_block(&m, k * 3).unwrap();
    }
    let record = m.stop();
    assert_charged_by_the_model(&record.served, &model, 3);
    let mut draws = Streams::new(3).stream(1);
    for s in &record.served {
        let added = s.charge.model_s() / 0.5 - s.charge.model_s();
        let scale = [0.0, 2.0][(draws.unit() * 2.0) as usize];
        assert!((s.charge.slowdown_s - added * scale).abs() < 1e-12, "{s:?}");
    }
}
