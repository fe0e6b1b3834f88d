//! The model and workloads iowatt ships (python/iowatt/sim/*.toml), read as the Python layer
//! hands them over, and the built-in SATA fan curve.

use std::collections::BTreeMap;
use std::path::Path;

use iowatt_sim::server::{Config, Curve, Job, Model, PolicyName, WorkloadSet};

fn read(name: &str) -> toml::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../python/iowatt/sim")
        .join(name);
    toml::from_str(&std::fs::read_to_string(&path).expect("shipped file")).expect("valid TOML")
}

pub fn model() -> Model {
    read("server.toml")
        .try_into()
        .expect("the shipped model deserialises")
}

pub fn jobs() -> (BTreeMap<String, Job>, Vec<WorkloadSet>) {
    let v = read("workloads.toml");
    let jobs = v["jobs"].clone().try_into().expect("jobs deserialise");
    let sets = v["workloads"]
        .as_table()
        .expect("a table of sets")
        .iter()
        .map(|(name, list)| WorkloadSet {
            name: name.clone(),
            jobs: list.clone().try_into().expect("a list of job names"),
        })
        .collect();
    (jobs, sets)
}

/// HIT SATA's fan curve (the lower of the two SATA disks at every step).
pub fn sata() -> Curve {
    let pts = [
        (0.0, 1.0),
        (50.0, 1.0),
        (60.0, 0.78),
        (70.0, 0.56),
        (80.0, 0.38),
        (90.0, 0.22),
        (100.0, 0.12),
    ];
    Curve {
        source: "HIT SATA".into(),
        points: pts.iter().map(|&(x, y)| [x, y, y, y]).collect(),
    }
}

#[allow(dead_code)] // the example reads only the SATA curve
pub fn flat() -> Curve {
    Curve {
        source: "flat".into(),
        points: vec![[0.0, 1.0, 1.0, 1.0], [100.0, 1.0, 1.0, 1.0]],
    }
}

pub fn config(workloads: &[&str], policies: &[PolicyName]) -> Config {
    let (jobs, sets) = jobs();
    Config {
        model: model(),
        jobs,
        workloads: workloads
            .iter()
            .map(|w| {
                sets.iter()
                    .find(|s| s.name == *w)
                    .expect("a shipped set")
                    .clone()
            })
            .collect(),
        policies: policies.to_vec(),
        curve: sata(),
        seeds: vec![1],
        resolution_s: 1.0,
        threads: 2,
    }
}
