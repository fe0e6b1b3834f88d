//! Compact thermal RC networks, as HotSpot models a chip and its package: nodes with heat
//! capacities, thermal resistances between them and to the ambient air, and powers in.
//!
//! `C dT/dt + G T = P + g_amb T_amb`, with `G` the conductance matrix. With `P` held over a
//! step `h`, the exact solution is `T(t+h) = A T(t) + B (P + g_amb T_amb)`, where
//! `A = exp(−C⁻¹G h)` and `B = (I − A) G⁻¹` (shared/reference/sim-models.md §1.1). Both are
//! computed once per network: when a fan changes the convective resistance, the simulator keeps
//! one [`Step`] per fan level.

use thiserror::Error;

use crate::linalg::{expm, identity, mul, solve};

#[derive(Debug, Error, PartialEq)]
pub enum ThermalError {
    #[error("{0}")]
    Invalid(String),
    #[error("no node of the network reaches the ambient air, so it has no steady state")]
    NoAmbient,
}

#[derive(Debug, Clone, Default)]
pub struct Network {
    names: Vec<String>,
    /// J/K per node.
    capacitance: Vec<f64>,
    /// (i, j, W/K) between nodes; i == j: to the ambient air.
    links: Vec<(usize, usize, f64)>,
}

impl Network {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Adds a node of `capacitance` J/K; returns its index.
    pub fn node(&mut self, name: &str, capacitance: f64) -> Result<usize, ThermalError> {
        if !(capacitance.is_finite() && capacitance > 0.0) {
            return Err(ThermalError::Invalid(format!(
                "node `{name}`: heat capacity {capacitance} J/K must be above 0"
            )));
        }
        self.names.push(name.to_owned());
        self.capacitance.push(capacitance);
        Ok(self.names.len() - 1)
    }

    /// A resistance of `r` K/W between nodes `a` and `b`.
    pub fn connect(&mut self, a: usize, b: usize, r: f64) -> Result<(), ThermalError> {
        self.link(a, b, r)
    }

    /// A resistance of `r` K/W from node `a` to the ambient air.
    pub fn to_ambient(&mut self, a: usize, r: f64) -> Result<(), ThermalError> {
        self.link(a, a, r)
    }

    fn link(&mut self, a: usize, b: usize, r: f64) -> Result<(), ThermalError> {
        let n = self.len();
        if a >= n || b >= n {
            return Err(ThermalError::Invalid(format!("no node {}", a.max(b))));
        }
        if !(r.is_finite() && r > 0.0) {
            let (x, y) = (&self.names[a], &self.names[b]);
            let what = if a == b {
                format!("`{x}` to the air")
            } else {
                format!("`{x}`–`{y}`")
            };
            return Err(ThermalError::Invalid(format!(
                "resistance {what}: {r} K/W must be above 0"
            )));
        }
        self.links.push((a, b, 1.0 / r));
        Ok(())
    }

    /// (G, g_amb): the conductance matrix, ambient links on its diagonal, and each node's
    /// conductance to the air.
    fn conductance(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.len();
        let mut g = vec![0.0; n * n];
        let mut air = vec![0.0; n];
        for &(a, b, c) in &self.links {
            if a == b {
                g[a * n + a] += c;
                air[a] += c;
            } else {
                g[a * n + a] += c;
                g[b * n + b] += c;
                g[a * n + b] -= c;
                g[b * n + a] -= c;
            }
        }
        (g, air)
    }

    /// The temperatures the network settles at under constant `power` (W per node).
    pub fn steady_state(&self, power: &[f64], ambient_c: f64) -> Result<Vec<f64>, ThermalError> {
        let (g, air) = self.conductance();
        let rhs: Vec<f64> = power
            .iter()
            .zip(&air)
            .map(|(p, a)| p + a * ambient_c)
            .collect();
        solve(&g, &rhs, self.len(), 1).ok_or(ThermalError::NoAmbient)
    }

    /// The steady-state operator: `G⁻¹`, so that the temperatures under a given power are one
    /// matrix-vector product (a controller asks this for every fan level it considers).
    pub fn steady(&self) -> Result<Steady, ThermalError> {
        let n = self.len();
        let (g, air) = self.conductance();
        let g_inv = solve(&g, &identity(n), n, n).ok_or(ThermalError::NoAmbient)?;
        Ok(Steady { n, g_inv, air })
    }

    /// The exact step of `step_s` seconds.
    pub fn discretise(&self, step_s: f64) -> Result<Step, ThermalError> {
        if !(step_s.is_finite() && step_s > 0.0) {
            return Err(ThermalError::Invalid(format!(
                "step {step_s} s must be above 0"
            )));
        }
        let n = self.len();
        let (g, air) = self.conductance();
        let g_inv = solve(&g, &identity(n), n, n).ok_or(ThermalError::NoAmbient)?;
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                m[i * n + j] = -g[i * n + j] / self.capacitance[i] * step_s;
            }
        }
        let a = expm(&m, n);
        let mut i_minus_a = identity(n);
        i_minus_a.iter_mut().zip(&a).for_each(|(x, a)| *x -= a);
        let b = mul(&i_minus_a, &g_inv, n);
        // B·(P + g_amb T_amb) = B·P + T_amb·(B·g_amb): the second term's vector once, here.
        let b_air = (0..n)
            .map(|i| (0..n).map(|j| b[i * n + j] * air[j]).sum())
            .collect();
        // Each row of A beside the same row of B, so a tick reads one contiguous row per node
        // against [T, P].
        let ab = (0..n)
            .flat_map(|i| a[i * n..(i + 1) * n].iter().chain(&b[i * n..(i + 1) * n]))
            .copied()
            .collect();
        Ok(Step { n, ab, b_air })
    }
}

/// A [`Network`]'s steady state as an operator (see [`Network::steady`]).
#[derive(Debug, Clone)]
pub struct Steady {
    n: usize,
    g_inv: Vec<f64>,
    air: Vec<f64>,
}

impl Steady {
    /// `out` = the temperatures the network settles at under `power`, the air at `ambient_c`.
    pub fn solve(&self, power: &[f64], ambient_c: f64, out: &mut [f64]) {
        let n = self.n;
        for (i, o) in out.iter_mut().enumerate().take(n) {
            let row = &self.g_inv[i * n..(i + 1) * n];
            *o = row
                .iter()
                .zip(power.iter().zip(&self.air))
                .map(|(g, (p, a))| g * (p + a * ambient_c))
                .sum();
        }
    }
}

/// One exact step of a [`Network`]: a tick is two matrix-vector products, with no allocation.
#[derive(Debug, Clone)]
pub struct Step {
    n: usize,
    /// Row i: A's row i, then B's row i.
    ab: Vec<f64>,
    b_air: Vec<f64>,
}

impl Step {
    /// `out` = the temperatures one step after `temps` under `power` (W per node), with the air
    /// at `ambient_c`.
    pub fn advance(&self, temps: &[f64], power: &[f64], ambient_c: f64, out: &mut [f64]) {
        let n = self.n;
        for (i, o) in out.iter_mut().enumerate().take(n) {
            let row = &self.ab[2 * n * i..2 * n * (i + 1)];
            *o = self.b_air[i] * ambient_c + dot(&row[..n], temps) + dot(&row[n..], power);
        }
    }
}

/// A dot product in four lanes, which the compiler turns into vector instructions (one running
/// sum would have to be kept in order). The order is fixed, so the bits are the same anywhere.
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (a4.remainder(), b4.remainder());
    for (x, y) in a4.zip(b4) {
        for k in 0..4 {
            lanes[k] += x[k] * y[k];
        }
    }
    let mut sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}
