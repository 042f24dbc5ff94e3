package calibration

import "math"

// nnls solves min ‖A·x − y‖² subject to x ≥ 0 for a few unknowns (len(A[0]) ≤ 3) exactly:
// the optimum is the unconstrained least-squares solution on some subset of the unknowns
// (the others 0), so every subset is tried and the best non-negative one kept. ok is false
// when no subset has a non-negative solution.
func nnls(a [][]float64, y []float64) (x []float64, ok bool) {
	n := len(a[0])
	best := math.Inf(1)
	for mask := 1; mask < 1<<n; mask++ {
		var cols []int
		for j := range n {
			if mask&(1<<j) != 0 {
				cols = append(cols, j)
			}
		}
		sol, solved := leastSquares(a, y, cols)
		if !solved {
			continue
		}
		full := make([]float64, n)
		neg := false
		for k, j := range cols {
			full[j] = sol[k]
			neg = neg || sol[k] < 0
		}
		if neg {
			continue
		}
		var r float64
		for i := range a {
			d := -y[i]
			for j := range n {
				d += a[i][j] * full[j]
			}
			r += d * d
		}
		if r < best {
			best, x, ok = r, full, true
		}
	}
	return x, ok
}

// leastSquares solves the normal equations of the columns cols of a by Gaussian
// elimination with partial pivoting; false when they are singular.
func leastSquares(a [][]float64, y []float64, cols []int) ([]float64, bool) {
	k := len(cols)
	m := make([][]float64, k) // [AᵀA | Aᵀy]
	for p := range k {
		m[p] = make([]float64, k+1)
		for i := range a {
			for q := range k {
				m[p][q] += a[i][cols[p]] * a[i][cols[q]]
			}
			m[p][k] += a[i][cols[p]] * y[i]
		}
	}
	for c := range k {
		piv := c
		for r := c + 1; r < k; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if math.Abs(m[piv][c]) < 1e-12*(1+math.Abs(m[c][c])) {
			return nil, false
		}
		m[c], m[piv] = m[piv], m[c]
		for r := range k {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for q := c; q <= k; q++ {
				m[r][q] -= f * m[c][q]
			}
		}
	}
	x := make([]float64, k)
	for c := range k {
		x[c] = m[c][k] / m[c][c]
	}
	return x, true
}
