//! Many small dense linear systems, solved one after another: the per-session normal
//! equations of the prompt reconstruction (`fit.rs`).
//!
//! Each system is n×n (a handful of unknowns), given row-major with its right-hand side.
//! Gauss-Jordan elimination with partial pivoting on `[A | b | I]` yields the solution and
//! the inverse's diagonal (the unknowns' variances). The arithmetic is the textbook one, in
//! the order the Python version it replaced used, so results are the same to the bit; the
//! gain is doing it without a Python object per matrix entry.
#![forbid(unsafe_code)]

/// Solutions and inverse diagonals of the systems, concatenated: system k has `sizes[k]`
/// unknowns, its matrix `sizes[k]²` entries of `matrices` and its vector `sizes[k]` of
/// `vectors`, in order. Missing entries (inputs shorter than the sizes say) count as 0. A
/// singular system gives non-finite values, never a panic.
pub fn solve_systems(sizes: &[usize], matrices: &[f64], vectors: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let total: usize = sizes.iter().sum();
    let mut theta = Vec::with_capacity(total);
    let mut variance = Vec::with_capacity(total);
    let (mut m_at, mut v_at) = (0usize, 0usize);
    for &n in sizes {
        let width = 2 * n + 1;
        let mut aug = vec![0.0f64; n * width];
        for (i, row) in aug.chunks_exact_mut(width).enumerate() {
            for (j, cell) in row.iter_mut().take(n).enumerate() {
                *cell = matrices.get(m_at + i * n + j).copied().unwrap_or(0.0);
            }
            if let Some(cell) = row.get_mut(n) {
                *cell = vectors.get(v_at + i).copied().unwrap_or(0.0);
            }
            if let Some(cell) = row.get_mut(n + 1 + i) {
                *cell = 1.0;
            }
        }
        eliminate(&mut aug, n, width);
        for (i, row) in aug.chunks_exact(width).enumerate() {
            theta.push(row.get(n).copied().unwrap_or(f64::NAN));
            variance.push(row.get(n + 1 + i).copied().unwrap_or(f64::NAN));
        }
        m_at += n * n;
        v_at += n;
    }
    (theta, variance)
}

/// Gauss-Jordan on the `n` rows of `width` values in `aug`, in place.
fn eliminate(aug: &mut [f64], n: usize, width: usize) {
    let at = |aug: &[f64], r: usize, c: usize| aug.get(r * width + c).copied().unwrap_or(0.0);
    // The pivot row scaled, refilled for each column.
    let mut pivot_row: Vec<f64> = Vec::with_capacity(width);
    for col in 0..n {
        // The first row at or below `col` with the largest |value| in column `col`.
        let mut pivot = col;
        for r in col + 1..n {
            if at(aug, r, col).abs() > at(aug, pivot, col).abs() {
                pivot = r;
            }
        }
        if pivot != col {
            for c in 0..width {
                aug.swap(col * width + c, pivot * width + c);
            }
        }
        let head = at(aug, col, col);
        pivot_row.clear();
        pivot_row.extend((0..width).map(|c| at(aug, col, c) / head));
        for (r, row) in aug.chunks_exact_mut(width).enumerate() {
            if r == col {
                row.copy_from_slice(&pivot_row);
                continue;
            }
            let factor = row.get(col).copied().unwrap_or(0.0);
            if factor != 0.0 {
                for (v, w) in row.iter_mut().zip(&pivot_row) {
                    *v -= factor * w;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::solve_systems;

    #[test]
    fn solves_each_system_and_gives_the_inverse_diagonal() {
        // [[4, 2], [2, 3]] x = [2, 1] -> x = [0.5, 0]; inverse diagonal [3/8, 4/8].
        // then [[2]] x = [6] -> x = 3, inverse 0.5.
        let (theta, variance) =
            solve_systems(&[2, 1], &[4.0, 2.0, 2.0, 3.0, 2.0], &[2.0, 1.0, 6.0]);
        assert_eq!(theta, vec![0.5, 0.0, 3.0]);
        assert_eq!(variance, vec![0.375, 0.5, 0.5]);
    }

    #[test]
    fn pivots_on_the_largest_entry() {
        // [[0, 1], [1, 0]] x = [2, 3] needs a row swap: x = [3, 2].
        let (theta, _) = solve_systems(&[2], &[0.0, 1.0, 1.0, 0.0], &[2.0, 3.0]);
        assert_eq!(theta, vec![3.0, 2.0]);
    }

    #[test]
    fn short_or_singular_input_does_not_panic() {
        let (theta, variance) = solve_systems(&[3], &[1.0], &[]);
        assert_eq!(theta.len(), 3);
        assert_eq!(variance.len(), 3);
        let (theta, _) = solve_systems(&[1], &[0.0], &[1.0]);
        assert!(!theta[0].is_finite());
    }
}
