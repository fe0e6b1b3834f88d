//! The server simulator against answers known without it: the physics in closed form, the
//! controllers' contracts, determinism, and the study's expected shape.

use std::sync::atomic::AtomicBool;

use iowatt_sim::server::{
    run, Curve, Job, Kind, Pattern, Phase, Plant, PolicyName, Progress, RunOutput, WorkloadSet,
    SERIES_COLUMNS,
};

use crate::shipped;

fn simulate(config: &iowatt_sim::server::Config) -> Vec<RunOutput> {
    run(config, &Progress::default(), &AtomicBool::new(false)).expect("runs")
}

fn column<'a>(o: &'a RunOutput, name: &str) -> &'a [f64] {
    let i = SERIES_COLUMNS
        .iter()
        .position(|c| *c == name)
        .expect("a column");
    &o.series.columns[i]
}

#[test]
fn fan_power_is_cubic_in_pwm_and_airflow_linear() {
    let model = shipped::model();
    let plant = Plant::new(&model).unwrap();
    assert!((plant.fan_w(100) - model.fans.max_w).abs() < 1e-9);
    assert!((plant.fan_w(50) - model.fans.max_w / 8.0).abs() < 1e-9);
    assert!((plant.fan_w(80) / plant.fan_w(40) - 8.0).abs() < 1e-9);
    // Preheat: the same heat warms the air half as much at twice the airflow.
    let (_, at40) = plant.air(40, 20.0, 0.0);
    let (_, at80) = plant.air(80, 20.0, 0.0);
    assert!(((at40 - model.inlet_c) / (at80 - model.inlet_c) - 2.0).abs() < 1e-9);
}

#[test]
fn the_server_network_settles_where_the_linear_solve_says() {
    let model = shipped::model();
    let mut plant = Plant::new(&model).unwrap();
    plant.pwm = 60;
    let nd = plant.nodes;
    let mut power = vec![0.0; nd.len()];
    for (i, p) in power.iter_mut().enumerate().take(nd.cores) {
        *p = 10.0 + i as f64;
    }
    power[nd.l3] = 15.0;
    power[nd.dimm0] = 6.0;
    let air = plant.air(60, 5.0, 6.0);
    let mut want = Vec::new();
    plant.settle(60, &power, air, |_, _| 0.0, &mut want);
    // 67 minutes of 1 ms ticks: 25 times the slowest time constant (the DIMMs', 2.6 min at
    // 60 % PWM).
    for _ in 0..4_000_000 {
        plant.advance(&power, air);
    }
    for (i, (got, want)) in plant.temps.iter().zip(&want).enumerate() {
        assert!((got - want).abs() < 1e-6, "node {i}: {got} vs {want}");
    }
    // And the series sum where it is one: all heat leaves through the sink's convection.
    let total: f64 = power[..nd.sink].iter().sum();
    let r_conv = model.socket.r_convection_k_w * 0.6f64.powf(-model.fans.convection_exponent);
    assert!((want[nd.sink] - (air.0 + total * r_conv)).abs() < 1e-9);
}

#[test]
fn gating_engages_at_the_threshold_by_two_percent_a_tick_and_releases() {
    let model = shipped::model();
    let mut plant = Plant::new(&model).unwrap();
    plant.pwm = model.fans.min_pwm;
    let nd = plant.nodes;
    let mut power = vec![0.0; nd.len()];
    power[0] = 120.0;
    let air = plant.air(plant.pwm, 0.0, 0.0);
    let mut ticks = 0;
    while plant.temps[0] < model.control.gating_c {
        assert_eq!(plant.gating[0], 0.0, "no gating below the threshold");
        plant.advance(&power, air);
        ticks += 1;
        assert!(ticks < 10_000_000, "the core never reached the threshold");
    }
    assert!((plant.gating[0] - model.control.gating_step).abs() < 1e-12);
    let mut hot_ticks = 1;
    while plant.temps[0] >= model.control.gating_c && hot_ticks < 10 {
        plant.advance(&power, air);
        hot_ticks += 1;
        let want = (hot_ticks as f64 * model.control.gating_step).min(1.0);
        assert!((plant.gating[0] - want).abs() < 1e-9, "tick {hot_ticks}");
    }
    // Power off: gating falls by the same step per tick to zero once the core cools.
    power[0] = 0.0;
    let mut before = plant.gating[0];
    for _ in 0..20_000 {
        plant.advance(&power, air);
        if plant.temps[0] < model.control.gating_c {
            let want = (before - model.control.gating_step).max(0.0);
            assert!((plant.gating[0] - want).abs() < 1e-9);
        }
        before = plant.gating[0];
    }
    assert_eq!(plant.gating[0], 0.0);
}

#[test]
fn fstm_zones_come_from_the_curves_slope() {
    let t = shipped::model().policy.slope_threshold;
    assert!(shipped::flat().disk_zones(t).is_empty());
    // HIT SATA falls −2.2, −2.2, −1.8, −1.6 per unit over its 10 % steps above 50 %, and
    // exactly −1 over the last, which the rule leaves temperature-driven.
    assert_eq!(shipped::sata().disk_zones(t), vec![[50.0, 90.0]]);
    // Only the steep part of a curve: −0.5 per unit, then −2.
    let curve = Curve {
        source: "two slopes".into(),
        points: vec![
            [0.0, 1.0, 1.0, 1.0],
            [40.0, 0.8, 0.8, 0.8],
            [60.0, 0.4, 0.4, 0.4],
        ],
    };
    assert_eq!(curve.disk_zones(t), vec![[40.0, 60.0]]);
}

#[test]
fn a_curve_outside_zero_to_one_or_out_of_order_is_refused() {
    let mut c = shipped::sata();
    c.points[3][1] = 1.2;
    c.points[3][3] = 1.2;
    assert!(c
        .check()
        .unwrap_err()
        .to_string()
        .contains("not within 0..1"));
    let mut c = shipped::sata();
    c.points.swap(1, 2);
    assert!(c.check().unwrap_err().to_string().contains("out of order"));
}

/// Eight service jobs that read for a while and then all compute at once: a step of the whole
/// socket's load.
fn step_load() -> iowatt_sim::server::Config {
    let mut config = shipped::config(&["W1"], &[PolicyName::Dlb]);
    config.curve = shipped::flat();
    config.model.control.jitter_cv = 0.0;
    let phase = |name: &str, cpu_s, io_gb| Phase {
        name: name.into(),
        cpu_s,
        io_gb,
        pattern: Pattern::Seq,
        mem_w: 1.0,
        cache_hit: Vec::new(),
        cache_cpu: 0.0,
    };
    config.jobs.insert(
        "step".into(),
        Job {
            kind: Kind::Service,
            mem_gb: 1.0,
            activity: 1.0,
            mem_sensitivity: 0.0,
            mem_w: 0.0,
            table_gb: 10.0,
            phases: vec![phase("read", 0.0, 14.0), phase("compute", 400.0, 0.0)],
        },
    );
    config.workloads = vec![WorkloadSet {
        name: "step".into(),
        jobs: vec!["step".into(); 8],
    }];
    config
}

#[test]
fn the_pi_controller_settles_on_a_step_load_without_passing_the_limit() {
    let config = step_load();
    let out = &simulate(&config)[0];
    let (temps, pwm) = (column(out, "core_max_c"), column(out, "pwm"));
    let target = config.model.control.cpu_target_c;
    let aim = target - config.model.policy.pi_guard_c;
    // The read phase (14 GB at 140 MB/s) ends at 100 s: the step.
    let before = pwm[95];
    assert!(
        pwm[150] > before + 10.0,
        "the fans answered the step: {before} → {}",
        pwm[150]
    );
    let peak = temps[100..].iter().copied().fold(f64::MIN, f64::max);
    assert!(
        peak < target,
        "overshoot to {peak} °C, past the {target} °C limit"
    );
    let last = temps.len() - 1;
    for &t in &temps[last - 60..last] {
        assert!(
            (t - aim).abs() < 1.0,
            "settled at {t} °C, aiming at {aim} °C"
        );
    }
    assert_eq!(out.gating_s, 0.0);
}

#[test]
fn fstm_sizes_its_cache_by_the_fans_band() {
    let config = shipped::config(&["W4"], &[PolicyName::Fstm, PolicyName::FstmNoSsd]);
    let out = simulate(&config);
    let bands = &config.model.policy.cache_bands;
    let table = config.jobs["q13"].table_gb;
    let (pwm, cache) = (column(&out[0], "pwm"), column(&out[0], "cache_gb"));
    let mut seen = std::collections::BTreeSet::new();
    for (p, c) in pwm.iter().zip(cache).take(pwm.len() - 1) {
        let share = bands.iter().rev().find(|b| *p >= b[0]).unwrap()[1];
        assert!((c - share * table).abs() < 1e-9, "{c} GB at {p} % PWM");
        seen.insert((share * 1000.0) as u32);
    }
    assert!(!seen.is_empty());
    assert!(
        column(&out[1], "cache_gb").iter().all(|c| *c == 0.0),
        "NoSSD has no cache"
    );
    assert!(out[1].ssd_mb == 0.0 && out[0].ssd_mb > 0.0);
}

#[test]
fn the_same_seed_gives_the_same_bits_whatever_the_threads() {
    let mut config = shipped::config(&["W3", "W4"], &PolicyName::ALL);
    config.seeds = vec![7, 8];
    config.threads = 1;
    let one = simulate(&config);
    config.threads = 3;
    let three = simulate(&config);
    assert_eq!(one.len(), 2 * 5 * 2);
    for (a, b) in one.iter().zip(&three) {
        assert_eq!(
            (&a.workload, a.policy, a.seed),
            (&b.workload, b.policy, b.seed)
        );
        assert_eq!(a.service_s.to_bits(), b.service_s.to_bits());
        assert_eq!(a.energy.socket.to_bits(), b.energy.socket.to_bits());
        assert_eq!(a.series.columns, b.series.columns);
        assert_eq!(a.events_total, b.events_total);
    }
    // Another seed varies the jobs' sizes, so the runs differ.
    assert_ne!(one[0].service_s, one[1].service_s);
}

#[test]
fn the_policies_rank_as_the_study_found_on_the_hash_join_set() {
    let out = simulate(&shipped::config(&["W4"], &PolicyName::ALL));
    let by = |p: PolicyName| out.iter().find(|o| o.policy == p).unwrap();
    let (dlb, jetc, oracle) = (
        by(PolicyName::Dlb),
        by(PolicyName::Jetc),
        by(PolicyName::AppOracle),
    );
    let (fstm, nossd) = (by(PolicyName::Fstm), by(PolicyName::FstmNoSsd));
    assert!(jetc.mean_pwm < dlb.mean_pwm, "JETC runs the fans slower");
    assert!(jetc.service_s < dlb.service_s);
    let total = |o: &RunOutput| o.energy.socket + o.energy.memory + o.energy.fans;
    assert!(total(jetc) < total(dlb));
    for o in [fstm, nossd] {
        assert!(o.service_s < jetc.service_s && o.service_s < dlb.service_s);
    }
    assert!(
        fstm.service_s < nossd.service_s,
        "the cache helps the hash join"
    );
    assert!(
        oracle.batch_speed < 0.98 * dlb.batch_speed,
        "App-Oracle slows batch jobs"
    );
    for o in [jetc, fstm, nossd] {
        assert!(
            o.batch_speed > 0.99 * dlb.batch_speed,
            "{:?} slowed batch jobs",
            o.policy
        );
    }
}
