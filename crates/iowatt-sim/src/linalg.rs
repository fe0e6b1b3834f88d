//! Small dense matrices (row-major `n × n` in a `Vec<f64>`): what a thermal network of a few
//! dozen nodes needs, and nothing more — a product, a solve, and the exponential.

pub(crate) fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

pub(crate) fn mul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            if aik == 0.0 {
                continue;
            }
            for j in 0..n {
                out[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    out
}

/// The largest row sum of absolute values (the ∞-norm).
fn norm(a: &[f64], n: usize) -> f64 {
    (0..n)
        .map(|i| a[i * n..(i + 1) * n].iter().map(|x| x.abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// `exp(a)` by scaling and squaring: `a / 2^s` has norm ≤ 1/2, where 18 Taylor terms are exact
/// to double precision, then the result is squared `s` times.
pub(crate) fn expm(a: &[f64], n: usize) -> Vec<f64> {
    let norm = norm(a, n);
    let s = if norm > 0.5 {
        (norm / 0.5).log2().ceil() as i32
    } else {
        0
    };
    let scale = libm::ldexp(1.0, -s);
    let x: Vec<f64> = a.iter().map(|v| v * scale).collect();
    let mut sum = identity(n);
    let mut term = identity(n);
    for k in 1..=18 {
        term = mul(&term, &x, n);
        let f = 1.0 / k as f64;
        term.iter_mut().for_each(|v| *v *= f);
        sum.iter_mut().zip(&term).for_each(|(s, t)| *s += t);
    }
    for _ in 0..s {
        sum = mul(&sum, &sum, n);
    }
    sum
}

/// Solves `a · X = b` for `X` (`b` has `cols` columns) by Gaussian elimination with partial
/// pivoting; None when `a` is singular.
pub(crate) fn solve(a: &[f64], b: &[f64], n: usize, cols: usize) -> Option<Vec<f64>> {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    for c in 0..n {
        let pivot = (c..n).max_by(|&i, &j| a[i * n + c].abs().total_cmp(&a[j * n + c].abs()))?;
        if a[pivot * n + c].abs() < 1e-300 {
            return None;
        }
        if pivot != c {
            for j in 0..n {
                a.swap(c * n + j, pivot * n + j);
            }
            for j in 0..cols {
                b.swap(c * cols + j, pivot * cols + j);
            }
        }
        for r in c + 1..n {
            let f = a[r * n + c] / a[c * n + c];
            if f == 0.0 {
                continue;
            }
            for j in c..n {
                a[r * n + j] -= f * a[c * n + j];
            }
            for j in 0..cols {
                b[r * cols + j] -= f * b[c * cols + j];
            }
        }
    }
    for c in (0..n).rev() {
        for j in 0..cols {
            let mut v = b[c * cols + j];
            for k in c + 1..n {
                v -= a[c * n + k] * b[k * cols + j];
            }
            b[c * cols + j] = v / a[c * n + c];
        }
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exponential_of_a_diagonal_is_the_exponentials_of_its_entries() {
        let a = [-3.0, 0.0, 0.0, 0.5];
        let e = expm(&a, 2);
        // Squaring the scaled exponential costs a few units in the last place.
        assert!((e[0] / (-3.0f64).exp() - 1.0).abs() < 1e-13);
        assert!((e[3] / 0.5f64.exp() - 1.0).abs() < 1e-13);
        assert_eq!((e[1], e[2]), (0.0, 0.0));
        // A large norm goes through scaling and squaring.
        let e = expm(&[-300.0], 1);
        assert!((e[0] / (-300.0f64).exp() - 1.0).abs() < 1e-9, "{}", e[0]);
    }

    #[test]
    fn a_rotation_generator_exponentiates_to_a_rotation() {
        let t = 1.2;
        let e = expm(&[0.0, -t, t, 0.0], 2);
        let want = [t.cos(), -t.sin(), t.sin(), t.cos()];
        for (got, want) in e.iter().zip(want) {
            assert!((got - want).abs() < 1e-14, "{got} {want}");
        }
    }

    #[test]
    fn solve_inverts_and_refuses_a_singular_matrix() {
        let a = [2.0, 1.0, 1.0, 3.0];
        let x = solve(&a, &identity(2), 2, 2).unwrap();
        let back = mul(&a, &x, 2);
        for (got, want) in back.iter().zip(identity(2)) {
            assert!((got - want).abs() < 1e-15);
        }
        assert!(solve(&[1.0, 2.0, 2.0, 4.0], &[1.0, 1.0], 2, 1).is_none());
    }
}
