//! FileBench's FileIO personalities as builders of the workload model, following
//! `filebench/filebench:workloads/{randomread,randomwrite,singlestream*,fivestream*}.f`:
//! one `largefile1` (five for multistream), threads named as FileBench names them, one flowop
//! each. Default parameter values belong to the caller, which records them in the manifest.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::WorkloadError;
use crate::spec::{default_slow_ns, Engine, FileSpec, Flowop, OpKind, ThreadSpec, Workload};

pub const PERSONALITIES: [&str; 6] = [
    "randomread",
    "randomwrite",
    "singlestreamread",
    "singlestreamwrite",
    "multistreamread",
    "multistreamwrite",
];

const STREAMS: usize = 5;

/// A FileIO personality with every parameter resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileIo {
    /// The workload's name in results (e.g. `randomread8k`).
    pub name: String,
    pub personality: String,
    /// Directory the files go in, or the block device itself when `device` is set.
    pub target: PathBuf,
    #[serde(default)]
    pub device: bool,
    pub iosize: u64,
    pub filesize: u64,
    pub nthreads: u32,
    pub directio: bool,
    pub dsync: bool,
    pub engine: Engine,
    pub iodepth: u32,
    pub runtime_ns: u64,
    pub ramp_ns: u64,
    pub rate: Option<f64>,
    pub seed: u64,
    #[serde(default)]
    pub workingset: u64,
    #[serde(default = "default_slow_ns")]
    pub slow_ns: Vec<u64>,
    #[serde(default)]
    pub heat_ns: Vec<u64>,
    /// With a rate: how long operations in flight at the deadline are waited for.
    #[serde(default)]
    pub drain_ns: Option<u64>,
}

impl FileIo {
    pub fn build(&self) -> Result<Workload, WorkloadError> {
        let (kind, random, streams) = match self.personality.as_str() {
            "randomread" => (OpKind::Read, true, 1),
            "randomwrite" => (OpKind::Write, true, 1),
            "singlestreamread" => (OpKind::Read, false, 1),
            "singlestreamwrite" => (OpKind::Write, false, 1),
            "multistreamread" => (OpKind::Read, false, STREAMS),
            "multistreamwrite" => (OpKind::Write, false, STREAMS),
            other => return Err(WorkloadError::UnknownPersonality(other.to_string())),
        };
        if self.device && streams > 1 {
            return Err(WorkloadError::Invalid(format!(
                "`{}` needs a directory target: it writes {STREAMS} separate files",
                self.personality
            )));
        }
        // FileBench's sequential-write personalities start from an empty file and grow it.
        let grows = kind == OpKind::Write && !random;
        let files = (1..=streams)
            .map(|i| self.file(format!("largefile{i}"), grows))
            .collect();
        let threads = if streams == 1 {
            vec![self.thread(
                thread_name(kind, random).into(),
                self.nthreads,
                0,
                kind,
                random,
            )]
        } else {
            (0..streams)
                .map(|i| {
                    let name = format!("{}{}", thread_name(kind, random), i + 1);
                    self.thread(name, 1, i, kind, random)
                })
                .collect()
        };
        Ok(Workload {
            name: self.name.clone(),
            files,
            threads,
            engine: self.engine,
            iodepth: self.iodepth,
            runtime_ns: self.runtime_ns,
            ramp_ns: self.ramp_ns,
            rate: self.rate,
            seed: self.seed,
            interval_ns: 1_000_000_000,
            slow_ns: self.slow_ns.clone(),
            heat_ns: self.heat_ns.clone(),
            filesets: Vec::new(),
            eventgen_rate: None,
            quit: Default::default(),
            drain_ns: self.drain_ns,
        })
    }

    fn file(&self, name: String, grows: bool) -> FileSpec {
        if self.device {
            return FileSpec {
                name: "device".into(),
                path: self.target.clone(),
                size: self.filesize,
                prealloc: false,
                reuse: true,
                device: true,
            };
        }
        FileSpec {
            path: self.target.join(&name),
            name,
            size: if grows { 0 } else { self.filesize },
            prealloc: true,
            reuse: !grows,
            device: false,
        }
    }

    fn thread(
        &self,
        name: String,
        instances: u32,
        file: usize,
        kind: OpKind,
        random: bool,
    ) -> ThreadSpec {
        let op = kind.as_str();
        let flowop = if random {
            format!("rand-{op}1")
        } else {
            format!("seq{op}")
        };
        ThreadSpec {
            name,
            instances,
            flowops: vec![Flowop {
                name: flowop,
                kind,
                file,
                iosize: self.iosize,
                random,
                directio: self.directio,
                dsync: self.dsync,
                workingset: self.workingset,
                ..Flowop::default()
            }],
            process: String::new(),
            memsize: 0,
        }
    }
}

fn thread_name(kind: OpKind, random: bool) -> &'static str {
    match (kind, random) {
        (_, true) => "rand-thread",
        (OpKind::Write, false) => "seqwrite",
        (_, false) => "seqread",
    }
}
