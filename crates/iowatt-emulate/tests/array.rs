//! The emulated array mounted for real: every request is served by the RAID simulator's own
//! engine as it arrives, so feeding the simulator the same arrivals gives the same times; the
//! disks' counters add up to the array's; the file system model charges lookups and access
//! times.

use std::fs;
use std::os::unix::fs::FileExt;

use iowatt_emulate::{ArrayOptions, Discipline, LayoutConfig, Options};
use iowatt_sim::disk::DiskModel;
use iowatt_sim::raid::{self, ArrayConfig, Atime, FsConfig, Spec, Trace};

const MIB: u64 = 1 << 20;

fn quick_model() -> DiskModel {
    let mut model = common::shipped("ultrastar-36z15");
    (model.spin_down_s, model.spin_up_s) = (0.05, 0.2);
    model
}

fn array_config(model: &DiskModel, fs: Option<FsConfig>) -> ArrayConfig {
    ArrayConfig {
        model: model.clone(),
        model_name: "quick".into(),
        disks: 4,
        stripe_bytes: 64 * 1024,
        bin_s: 1.0,
        cache_bytes: 0,
        spinup_stagger_s: 0.0,
        fs,
    }
}

mod common;

use common::Mounted;

/// A mount of `files` (name, bytes) served by `config`'s array under `spec`.
fn mounted(tag: &str, config: ArrayConfig, spec: Spec, files: &[(&str, u64)]) -> Mounted {
    let (root, backing, mount) = Mounted::dirs(tag);
    fs::create_dir_all(backing.join("d")).unwrap();
    for (name, bytes) in files {
        let data: Vec<u8> = (0..*bytes).map(|i| (i % 251) as u8).collect();
        fs::write(backing.join(name), data).unwrap();
    }
    let options = Options {
        backing,
        mount,
        model: config.model.clone(),
        spin_down: None,
        seed: 5,
        page_cache: false,
        discipline: Discipline::Fifo,
        vibration: None,
        array: Some(ArrayOptions {
            personality: "test".into(),
            used: 8 * MIB,
            layout: LayoutConfig {
                group_bytes: 128 * MIB,
                inodes_per_group: 8192,
                inode_bytes: 128,
            },
            dirs: Vec::new(),
            config,
            spec,
        }),
        settings: "{}".into(),
    };
    Mounted::start(root, options)
}

#[test]
fn each_request_takes_what_the_simulator_gives_for_the_same_arrivals() {
    let model = quick_model();
    let config = array_config(&model, None);
    let spec = Spec::Lru {
        timeout_s: Some(0.1),
        cycles_per_day: None,
    };
    let m = mounted("same", config.clone(), spec.clone(), &[("f", 2 * MIB)]);
    let f = fs::File::open(m.mount.join("f")).unwrap();
    let mut buf = vec![0u8; 192 * 1024];
    for at in [0, 5 * 64 * 1024, MIB] {
        f.read_exact_at(&mut buf, at).unwrap();
        assert_eq!(buf[7], ((at + 7) % 251) as u8, "the data pass through");
    }
    // Every disk idles past LRU's timeout and spins down; the next read waits for spin-ups.
    m.until("every disk in standby", |m| {
        (0..4).all(|d| m.control(&format!("disk{d}/state")) == "standby")
    });
    f.read_exact_at(&mut buf, 3 * 64 * 1024).unwrap();
    // A write reaches BACKING as it reaches the array.
    fs::write(m.mount.join("w"), b"written").unwrap();
    assert_eq!(fs::read(m.backing.join("w")).unwrap(), b"written");
    let per_disk: u64 = (0..4)
        .map(|d| {
            m.control(&format!("disk{d}/cycles"))
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(per_disk, m.control("cycles").parse::<u64>().unwrap());
    drop(f);
    let record = m.stop();
    let log = record.array.expect("an array's record");
    let served = &log.served;
    assert!(served.len() >= 4 && served.iter().all(|s| !s.drained));
    // The simulator, fed the arrivals the array saw, serves them at the same times.
    let trace = Trace {
        t_ns: served.iter().map(|s| s.arrived_ns).collect(),
        offset: served.iter().map(|s| s.offset).collect(),
        bytes: served.iter().map(|s| s.bytes).collect(),
        ..Trace::default()
    };
    let sim = raid::simulate(&config, &spec, &trace, 5).unwrap();
    for (i, s) in served.iter().enumerate() {
        assert_eq!(s.first_ns - s.arrived_ns, sim.latency_ns[i], "request {i}");
        assert_eq!(
            s.done_ns - s.arrived_ns,
            sim.completion_ns[i],
            "request {i}"
        );
    }
    let last = served.iter().rfind(|s| !s.write).unwrap();
    let spun_up = (model.spin_up_s * 1e9).round() as u64;
    assert!(last.done_ns - last.arrived_ns >= spun_up, "{last:?}");
    assert_eq!(log.run.spin_cycles.iter().sum::<u64>(), per_disk);
    // Each disk's state changes are recorded: four spin-downs, each entered once.
    let downs = log
        .changes
        .iter()
        .filter(|c| c.2 == iowatt_sim::disk::State::SpinningDown)
        .count();
    assert_eq!(downs as u64, per_disk);
}

#[test]
fn the_array_s_energy_is_its_disks_and_a_lookup_reads_the_file_s_metadata() {
    let model = quick_model();
    let fs_model = FsConfig {
        atime: Atime::Strict,
        writeback_s: 0.05,
        expire_s: 0.05,
        journal: false,
        commit_s: 5.0,
        journal_offset: 0,
        journal_bytes: 0,
        metadata_cache_bytes: 64 * MIB,
    };
    let m = mounted(
        "meta",
        array_config(&model, Some(fs_model)),
        Spec::Raid0,
        &[("d/a", 10_000), ("d/b", 10_000)],
    );
    // A stat reaches the mount as a lookup: the directory's and the inode's blocks are read.
    fs::metadata(m.mount.join("d/a")).unwrap();
    let counters = || -> serde_json::Value {
        serde_json::from_str(&m.control("counters.json")).expect("JSON")
    };
    let c = counters();
    assert!(c["lookups"].as_u64().unwrap() >= 1, "{c}");
    assert_eq!(c["fs_reads"], 2, "{c}");
    // b shares a's directory and inode block: nothing more to read.
    fs::metadata(m.mount.join("d/b")).unwrap();
    assert_eq!(counters()["fs_reads"], 2);
    // A read sets the access time: its inode block is written back once expired.
    fs::read(m.mount.join("d/a")).unwrap();
    m.until("the access time written back", |_| {
        counters()["fs_writes"].as_u64().unwrap() >= 1
    });
    let c = counters();
    let disks = c["disks"].as_array().unwrap();
    let sum: f64 = disks.iter().map(|d| d["energy_j"].as_f64().unwrap()).sum();
    assert!((sum - c["energy_j"].as_f64().unwrap()).abs() < 1e-9);
    for d in disks {
        let by_state: f64 = d["state_j"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        // Time in each state at its watts is the energy (the spin phases' own energy aside:
        // this array never spins down).
        assert!(
            (by_state - d["energy_j"].as_f64().unwrap()).abs() < 1e-3,
            "{d}"
        );
    }
    let record = m.stop();
    let log = record.array.unwrap();
    assert!(log.served.iter().any(|s| s.bytes == 0), "lookups recorded");
    assert_eq!(log.run.fs_reads, 2);
    assert!(log.run.fs_writes >= 1);
}
