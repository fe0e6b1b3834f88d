//! RC networks against their closed forms.

use iowatt_sim::thermal::{Network, ThermalError};

#[test]
fn a_single_block_follows_its_exponential_exactly() {
    // C = 2 J/K, R = 0.5 K/W, 10 W, air at 25 °C: T_ss = 30 °C, τ = RC = 1 s.
    let mut net = Network::new();
    let die = net.node("die", 2.0).unwrap();
    net.to_ambient(die, 0.5).unwrap();
    let step = net.discretise(0.1).unwrap();
    let mut t = [25.0];
    let mut next = [0.0];
    for k in 1..=50 {
        step.advance(&t, &[10.0], 25.0, &mut next);
        t = next;
        let exact = 30.0 + (25.0 - 30.0) * (-(k as f64) * 0.1).exp();
        assert!(
            (t[0] - exact).abs() < 1e-12,
            "step {k}: {} vs {exact}",
            t[0]
        );
    }
}

/// die → spreader → sink → air, with power in the die and a little in the sink.
fn package() -> Network {
    let mut net = Network::new();
    let die = net.node("die", 0.05).unwrap();
    let spreader = net.node("spreader", 5.0).unwrap();
    let sink = net.node("sink", 140.4).unwrap();
    net.connect(die, spreader, 0.2).unwrap();
    net.connect(spreader, sink, 0.1).unwrap();
    net.to_ambient(sink, 0.1).unwrap();
    net
}

#[test]
fn the_steady_state_is_the_series_sum_and_where_the_steps_settle() {
    let net = package();
    let power = [40.0, 0.0, 10.0];
    let ss = net.steady_state(&power, 45.0).unwrap();
    // All 50 W leave through the sink's 0.1 K/W; the die's 40 W cross 0.2 and 0.1 K/W.
    let sink = 45.0 + 50.0 * 0.1;
    let spreader = sink + 40.0 * 0.1;
    let die = spreader + 40.0 * 0.2;
    for (got, want) in ss.iter().zip([die, spreader, sink]) {
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }
    // One-millisecond steps for ten simulated minutes (the sink's τ is 140.4 J/K × 0.1 K/W
    // ≈ 14 s, so some forty time constants) end there too.
    let step = net.discretise(1e-3).unwrap();
    let (mut t, mut next) = ([45.0; 3], [0.0; 3]);
    for _ in 0..600_000 {
        step.advance(&t, &power, 45.0, &mut next);
        std::mem::swap(&mut t, &mut next);
    }
    for (got, want) in t.iter().zip(&ss) {
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
}

#[test]
fn a_network_without_a_way_to_the_air_or_with_a_bad_value_is_refused() {
    let mut net = Network::new();
    let a = net.node("a", 1.0).unwrap();
    let b = net.node("b", 1.0).unwrap();
    net.connect(a, b, 1.0).unwrap();
    assert_eq!(
        net.steady_state(&[1.0, 0.0], 25.0),
        Err(ThermalError::NoAmbient)
    );
    assert!(matches!(net.discretise(1e-3), Err(ThermalError::NoAmbient)));
    let e = net.connect(a, b, -0.1).unwrap_err().to_string();
    assert!(e.contains("`a`–`b`") && e.contains("-0.1"), "{e}");
    assert!(net.node("c", 0.0).unwrap_err().to_string().contains("`c`"));
    assert!(net.to_ambient(a, f64::NAN).is_err());
}
