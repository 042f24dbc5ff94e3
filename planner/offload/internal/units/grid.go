package units

// Grid indexes the discretized states of both phases of the POFO DP: A and Δ whole numbers
// of units with A + Δ ≤ M (stored data and backlog are both on the GPU). C_Δ has one Δ
// per state (Index1), the forward phase two, Δ_F and Δ_B (Index2).
type Grid struct {
	M          int
	W          []int // W[a] = M − a + 1, the number of Δ values at A = a
	Off1, Off2 []int // Σ_{a'<a} W[a'] and Σ_{a'<a} W[a']²
}

// NewGrid returns the grid of m units.
func NewGrid(m int) *Grid {
	g := &Grid{M: m, W: make([]int, m+1), Off1: make([]int, m+2), Off2: make([]int, m+2)}
	for a := 0; a <= m; a++ {
		g.W[a] = m - a + 1
		g.Off1[a+1] = g.Off1[a] + g.W[a]
		g.Off2[a+1] = g.Off2[a] + g.W[a]*g.W[a]
	}
	return g
}

// Size1 is the number of (A, Δ) states; Size2 that of the (A, Δ_F, Δ_B) states.
func (g *Grid) Size1() int { return g.Off1[g.M+1] }

// Size2 is the number of (A, Δ_F, Δ_B) states.
func (g *Grid) Size2() int { return g.Off2[g.M+1] }

// Step returns the Δ index of d, or −1 when d is not on the grid at A = a.
func (g *Grid) Step(a int, d float64) int {
	j := int(d)
	if d < 0 || j >= g.W[a] || float64(j) != d {
		return -1
	}
	return j
}

// StepAt is Step for any A: −1 when A is beyond the grid (such a state holds more than M).
func (g *Grid) StepAt(a int, d float64) int {
	if a > g.M {
		return -1
	}
	return g.Step(a, d)
}

// Index1 returns the position of (A, Δ), or −1 off the grid.
func (g *Grid) Index1(a, d float64) int {
	ia := int(a)
	if a < 0 || ia > g.M || float64(ia) != a {
		return -1
	}
	j := g.Step(ia, d)
	if j < 0 {
		return -1
	}
	return g.Off1[ia] + j
}

// Index2 returns the position of (A, Δ_F, Δ_B), or −1 off the grid.
func (g *Grid) Index2(a, f, b float64) int {
	ia := int(a)
	if a < 0 || ia > g.M || float64(ia) != a {
		return -1
	}
	jf, jb := g.Step(ia, f), g.Step(ia, b)
	if jf < 0 || jb < 0 {
		return -1
	}
	return g.Off2[ia] + jf*g.W[ia] + jb
}
