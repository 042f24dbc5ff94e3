package multichain

// minSlots returns m_min(R, b) of Lemma 2 (spec §4.3), the fewest slots with which the
// problem of remaining lengths r (of the branches' l stages) and kept input gradients b
// has a schedule. At the loss every branch's input and every output of a branch with
// stages is live (K̃ = K + #{r_i ≠ 0}); one more slot is needed for the working value of a
// backward, unless some branch has a single stage (its B_1 needs no extra slot, and its
// end frees one) or some branch without stages drops its gradient after the loss (its slot
// is free for the others).
//
// When the inputs stay (instance.keepInputs), a branch without stages also holds δ_0 from
// the loss on (z of them: K̃ + z at the loss), and a single-stage branch frees a slot at its
// end only when its input goes (it was cut above this state) or its gradient is dropped;
// the formula was checked against the exhaustive search of the same model.
//
// It takes O(K) time.
func minSlots(r, l []int, b []bool, keepInputs bool) int {
	k := len(r)
	kt := k
	for _, n := range r {
		if n != 0 {
			kt++
		}
	}
	if !keepInputs {
		spare := kt == k // r = 0⃗
		for i, n := range r {
			if n == 1 || (n == 0 && !b[i]) {
				spare = true
			}
		}
		if spare {
			return kt
		}
		return kt + 1
	}
	z, z1 := 0, 0
	long, spare := false, false
	for i, n := range r {
		switch {
		case l[i] == 0:
			z++
			if b[i] {
				z1++
			}
		case n >= 2:
			long = true
		case n == 1:
			stays := 0
			if n == l[i] {
				stays = 1
			}
			if bi := btoi(b[i]); 2-bi-stays >= 1 {
				spare = true
			}
		}
	}
	need := 0
	if long && !spare {
		need = 1
	}
	return kt + max(z, z1+need)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
