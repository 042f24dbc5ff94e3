package multichain

import (
	"fmt"
)

// replayUnits replays operations of Table 1.1 on the multiset model (spec §5.3's
// simulator): every input must be present, memory (the number of stored values) must stay
// within m, the loss runs once, each B once, and the final memory must be exactly
// {δ_0^(j) : b_j = 1}. It returns the makespan and the peak.
func replayUnits(in *instance, ops []unitOp, m int) (float64, int, error) {
	lay := newLayout(in)
	mem := make([]int, lay.n)
	for j := range in.L {
		mem[lay.a(j, 0)] = 1
	}
	used, peak := len(in.L), len(in.L)
	var t float64
	loss := false
	bs := map[[2]int]bool{}
	take := func(i int, what string) error {
		if mem[i] == 0 {
			return fmt.Errorf("%s is not in memory", what)
		}
		mem[i]--
		used--
		return nil
	}
	for n, o := range ops {
		j, p := o.branch, o.pos
		var err error
		switch o.kind {
		case unitS:
			if mem[lay.a(j, p)] == 0 {
				err = fmt.Errorf("S: a_%d of branch %d is not in memory", p, j)
			}
			mem[lay.a(j, p)]++
			used++
		case unitF:
			err = take(lay.a(j, p-1), fmt.Sprintf("F: a_%d of branch %d", p-1, j))
			mem[lay.a(j, p)]++
			used++
			t += in.uF[j][p]
		case unitB:
			if bs[[2]int{j, p}] {
				err = fmt.Errorf("B_%d of branch %d twice", p, j)
			}
			bs[[2]int{j, p}] = true
			if e := take(lay.d(j, p), fmt.Sprintf("B: δ_%d of branch %d", p, j)); e != nil {
				err = e
			}
			if p == 1 && in.keepInputs {
				if mem[lay.a(j, 0)] == 0 {
					err = fmt.Errorf("B: a_0 of branch %d is not in memory", j)
				}
			} else if e := take(lay.a(j, p-1), fmt.Sprintf("B: a_%d of branch %d", p-1, j)); e != nil {
				err = e
			}
			mem[lay.d(j, p-1)]++
			used++
			t += in.uB[j][p]
		case unitLoss:
			if loss {
				err = fmt.Errorf("the loss twice")
			}
			loss = true
			for jj, l := range in.L {
				if l == 0 && in.keepInputs {
					if mem[lay.a(jj, 0)] == 0 {
						err = fmt.Errorf("Loss: a_0 of branch %d is not in memory", jj)
					}
				} else if e := take(lay.a(jj, l), fmt.Sprintf("Loss: a_%d of branch %d", l, jj)); e != nil {
					err = e
				}
				mem[lay.d(jj, l)]++
				used++
			}
			t += in.uL
		case unitDrop:
			if in.b0[j] {
				err = fmt.Errorf("D̄ of branch %d, whose gradient is kept", j)
			}
			if e := take(lay.d(j, 0), fmt.Sprintf("D̄: δ_0 of branch %d", j)); e != nil {
				err = e
			}
		}
		if err != nil {
			return 0, 0, fmt.Errorf("op %d: %w", n, err)
		}
		peak = max(peak, used)
		if used > m {
			return 0, 0, fmt.Errorf("op %d: %d values stored, over %d slots", n, used, m)
		}
	}
	for j, l := range in.L {
		for q := 0; q <= l; q++ {
			want, wantA := 0, 0
			if q == 0 && in.b0[j] {
				want = 1
			}
			if q == 0 && in.keepInputs {
				wantA = 1
			}
			if mem[lay.a(j, q)] != wantA || mem[lay.d(j, q)] != want {
				return 0, 0, fmt.Errorf("final memory of branch %d position %d: a %d, δ %d", j, q, mem[lay.a(j, q)], mem[lay.d(j, q)])
			}
			if q > 0 && !bs[[2]int{j, q}] {
				return 0, 0, fmt.Errorf("B_%d of branch %d never ran", q, j)
			}
		}
	}
	if !loss {
		return 0, 0, fmt.Errorf("no loss")
	}
	return t, peak, nil
}
