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

/// A and B of a step (row-major), and B·g_amb.
type StepMatrices = (Vec<f64>, Vec<f64>, Vec<f64>);

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
        let (a, b, b_air) = self.step_matrices(step_s)?;
        Ok(Step::new(self.len(), &a, &b, b_air))
    }

    /// A and B of the step of `step_s` seconds (row-major), and B·g_amb.
    fn step_matrices(&self, step_s: f64) -> Result<StepMatrices, ThermalError> {
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
        Ok((a, b, b_air))
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
    /// A and B by groups of rows (see [`groups`]; rows past the last are zeros). A group of
    /// `g` rows holds A's rows, then B's, each as: for every four columns up to the last full
    /// four, those four values of each row in turn; then, for each column left, its value in
    /// each row.
    ab: Vec<f64>,
    b_air: Vec<f64>,
}

/// Partial sums per dot product, and the rows of a small group.
const LANES: usize = 4;

/// The groups of rows a tick computes together, as (first row, rows): eight rows at a time, or
/// four where four or fewer are left. The last group may run past the last row.
fn groups(n: usize) -> impl Iterator<Item = (usize, usize)> {
    let mut first = 0;
    std::iter::from_fn(move || {
        if first >= n {
            return None;
        }
        let rows = if n - first > LANES { 2 * LANES } else { LANES };
        first += rows;
        Some((first - rows, rows))
    })
}

impl Step {
    /// The step of `n` nodes from A and B (row-major) and B·g_amb.
    fn new(n: usize, a: &[f64], b: &[f64], b_air: Vec<f64>) -> Self {
        let full = n / LANES * LANES;
        let mut ab = Vec::with_capacity(2 * n * groups(n).map(|(_, g)| g).sum::<usize>());
        for (first, rows) in groups(n) {
            for m in [a, b] {
                let at = |r: usize, j: usize| {
                    if first + r < n {
                        m[(first + r) * n + j]
                    } else {
                        0.0
                    }
                };
                for c in (0..full).step_by(LANES) {
                    for r in 0..rows {
                        ab.extend((c..c + LANES).map(|j| at(r, j)));
                    }
                }
                for j in full..n {
                    ab.extend((0..rows).map(|r| at(r, j)));
                }
            }
        }
        Step { n, ab, b_air }
    }

    /// `out` = the temperatures one step after `temps` under `power` (W per node), with the air
    /// at `ambient_c`. `temps`, `power` and `out` hold at least one value per node.
    ///
    /// Node i is `b_air[i]·T_amb + A_i·T + B_i·P`, each dot product in four partial sums
    /// (element j into sum j mod 4, in order, up to the last full four) summed as
    /// (s0 + s1) + (s2 + s3), then the elements past the last full four added one by one. The
    /// order is fixed, so the bits are the same anywhere. A CPU with AVX does the same
    /// products and sums in the same order in 256-bit registers, one row's four partial sums
    /// to a register: AVX without FMA rounds each of them as SSE2 does, so the bits are those
    /// of the portable path.
    pub fn advance(&self, temps: &[f64], power: &[f64], ambient_c: f64, out: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX, checked just above.
            unsafe { self.advance_avx(temps, power, ambient_c, out) };
            return;
        }
        self.advance_portable(temps, power, ambient_c, out);
    }

    fn advance_portable(&self, temps: &[f64], power: &[f64], ambient_c: f64, out: &mut [f64]) {
        let (temps, power) = (&temps[..self.n], &power[..self.n]);
        for (first, rows, a, b) in self.groups() {
            if rows == LANES {
                let (at, bp) = (dots::<LANES>(a, temps), dots::<LANES>(b, power));
                self.rows(first, &at, &bp, ambient_c, out);
            } else {
                let (at, bp) = (
                    dots::<{ 2 * LANES }>(a, temps),
                    dots::<{ 2 * LANES }>(b, power),
                );
                self.rows(first, &at, &bp, ambient_c, out);
            }
        }
    }

    /// [`Step::advance_portable`] in AVX registers.
    ///
    /// # Safety
    /// The CPU must have AVX.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    unsafe fn advance_avx(&self, temps: &[f64], power: &[f64], ambient_c: f64, out: &mut [f64]) {
        let (temps, power) = (&temps[..self.n], &power[..self.n]);
        for (first, rows, a, b) in self.groups() {
            if rows == LANES {
                let (at, bp) = (avx::dots::<LANES>(a, temps), avx::dots::<LANES>(b, power));
                self.rows(first, &at, &bp, ambient_c, out);
            } else {
                let at = avx::dots::<{ 2 * LANES }>(a, temps);
                let bp = avx::dots::<{ 2 * LANES }>(b, power);
                self.rows(first, &at, &bp, ambient_c, out);
            }
        }
    }

    /// Each group's (first row, rows, A's part, B's part).
    #[inline(always)]
    fn groups(&self) -> impl Iterator<Item = (usize, usize, &[f64], &[f64])> {
        let n = self.n;
        groups(n).scan(0, move |at, (first, rows)| {
            let (a, b) = self.ab[*at..*at + 2 * n * rows].split_at(n * rows);
            *at += 2 * n * rows;
            Some((first, rows, a, b))
        })
    }

    /// The nodes from `first` on, given their A·T and B·P.
    #[inline(always)]
    fn rows(&self, first: usize, at: &[f64], bp: &[f64], ambient_c: f64, out: &mut [f64]) {
        let rows = first..self.n.min(first + at.len());
        let air = &self.b_air[rows.clone()];
        for (r, o) in out[rows].iter_mut().enumerate() {
            *o = air[r] * ambient_c + at[r] + bp[r];
        }
    }
}

/// A group of `G` rows (`m`, laid out as [`Step::ab`] holds them) against `v`: each row's dot
/// product in the order [`Step::advance`] gives.
#[inline(always)]
fn dots<const G: usize>(m: &[f64], v: &[f64]) -> [f64; G] {
    let full = v.len() / LANES * LANES;
    let ((mf, mr), (vf, vr)) = (m.split_at(G * full), v.split_at(full));
    // sums[r][k]: row r's partial sum k.
    let mut sums = [[0.0; LANES]; G];
    for (chunk, x) in mf.chunks_exact(G * LANES).zip(vf.chunks_exact(LANES)) {
        for (r, s) in sums.iter_mut().enumerate() {
            for k in 0..LANES {
                s[k] += chunk[LANES * r + k] * x[k];
            }
        }
    }
    let mut out = sums.map(|s| (s[0] + s[1]) + (s[2] + s[3]));
    for (col, x) in mr.chunks_exact(G).zip(vr) {
        for (o, c) in out.iter_mut().zip(col) {
            *o += c * x;
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_permute2f128_pd,
        _mm256_set1_pd, _mm256_setzero_pd, _mm256_storeu_pd, _mm256_unpackhi_pd,
        _mm256_unpacklo_pd,
    };

    use super::LANES;

    /// The first four values of `s`.
    #[target_feature(enable = "avx")]
    #[inline]
    fn load(s: &[f64]) -> __m256d {
        assert!(s.len() >= LANES);
        // SAFETY: `s` holds at least four f64s (asserted); the unaligned load reads those.
        unsafe { _mm256_loadu_pd(s.as_ptr()) }
    }

    /// [`super::dots`] with row r's four partial sums in register r: the same products and
    /// sums in the same order. Four rows' (s0 + s1) + (s2 + s3) come out of their registers
    /// at once: the pairs' sums side by side ([a0 + a1, b0 + b1, a2 + a3, b2 + b3] for rows a
    /// and b, the same for c and d), then the low halves plus the high halves.
    #[target_feature(enable = "avx")]
    #[inline]
    pub(super) fn dots<const G: usize>(m: &[f64], v: &[f64]) -> [f64; G] {
        let full = v.len() / LANES * LANES;
        let ((mf, mr), (vf, vr)) = (m.split_at(G * full), v.split_at(full));
        let mut sums = [_mm256_setzero_pd(); G];
        for (chunk, x) in mf.chunks_exact(G * LANES).zip(vf.chunks_exact(LANES)) {
            let x = load(x);
            for (r, s) in sums.iter_mut().enumerate() {
                *s = _mm256_add_pd(*s, _mm256_mul_pd(load(&chunk[LANES * r..]), x));
            }
        }
        let mut out = [0.0; G];
        for (q, o) in out.chunks_exact_mut(LANES).enumerate() {
            let [a, b, c, d] = [0, 1, 2, 3].map(|i| sums[LANES * q + i]);
            let ab = _mm256_add_pd(_mm256_unpacklo_pd(a, b), _mm256_unpackhi_pd(a, b));
            let cd = _mm256_add_pd(_mm256_unpacklo_pd(c, d), _mm256_unpackhi_pd(c, d));
            let mut dot = _mm256_add_pd(
                _mm256_permute2f128_pd::<0x20>(ab, cd),
                _mm256_permute2f128_pd::<0x31>(ab, cd),
            );
            for (col, x) in mr.chunks_exact(G).zip(vr) {
                let term = _mm256_mul_pd(load(&col[LANES * q..]), _mm256_set1_pd(*x));
                dot = _mm256_add_pd(dot, term);
            }
            // SAFETY: `o` holds four f64s; the unaligned store writes those.
            unsafe { _mm256_storeu_pd(o.as_mut_ptr(), dot) };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), values in [lo, hi).
    struct Draws(u64);

    impl Draws {
        fn next(&mut self, lo: f64, hi: f64) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            lo + (hi - lo) * (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A chain of `n` nodes with random capacities and resistances, some extra links across
    /// it, and every third node (and the last) to the air.
    fn network(n: usize, d: &mut Draws) -> Network {
        let mut net = Network::new();
        for i in 0..n {
            net.node(&format!("n{i}"), d.next(0.01, 2.0)).unwrap();
        }
        for i in 1..n {
            net.connect(i - 1, i, d.next(0.05, 2.0)).unwrap();
        }
        for i in 0..n {
            let j = (d.next(0.0, n as f64) as usize).min(n - 1);
            if i != j && d.next(0.0, 1.0) < 0.3 {
                net.connect(i, j, d.next(0.1, 5.0)).unwrap();
            }
            if i % 3 == 0 || i == n - 1 {
                net.to_ambient(i, d.next(0.1, 3.0)).unwrap();
            }
        }
        net
    }

    /// The step as it was first written, one row at a time: `b_air·T_amb + A·T + B·P`, each
    /// dot product in four lanes, (l0 + l1) + (l2 + l3), then the rest in order.
    fn reference(a: &[f64], b: &[f64], b_air: &[f64], t: &[f64], p: &[f64], amb: f64) -> Vec<f64> {
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
        let n = t.len();
        (0..n)
            .map(|i| {
                let row = i * n..(i + 1) * n;
                b_air[i] * amb + dot(&a[row.clone()], t) + dot(&b[row], p)
            })
            .collect()
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn every_path_gives_the_bits_of_the_row_by_row_step() {
        let mut d = Draws(0x9e37_79b9_7f4a_7c15);
        for n in (1..=21).chain([30, 37]) {
            let net = network(n, &mut d);
            for step_s in [1e-3, 0.05] {
                let (a, b, b_air) = net.step_matrices(step_s).unwrap();
                let step = net.discretise(step_s).unwrap();
                let mut t: Vec<f64> = (0..n).map(|_| d.next(20.0, 90.0)).collect();
                let p: Vec<f64> = (0..n).map(|_| d.next(0.0, 10.0)).collect();
                let amb = d.next(20.0, 45.0);
                let mut out = vec![0.0; n];
                for tick in 0..20 {
                    let want = reference(&a, &b, &b_air, &t, &p, amb);
                    step.advance_portable(&t, &p, amb, &mut out);
                    assert_eq!(bits(&out), bits(&want), "portable, n {n}, tick {tick}");
                    #[cfg(target_arch = "x86_64")]
                    if std::arch::is_x86_feature_detected!("avx") {
                        out.fill(0.0);
                        // SAFETY: the CPU has AVX, checked just above.
                        unsafe { step.advance_avx(&t, &p, amb, &mut out) };
                        assert_eq!(bits(&out), bits(&want), "AVX, n {n}, tick {tick}");
                    }
                    out.fill(0.0);
                    step.advance(&t, &p, amb, &mut out);
                    assert_eq!(bits(&out), bits(&want), "dispatched, n {n}, tick {tick}");
                    t.copy_from_slice(&out);
                }
            }
        }
    }
}
