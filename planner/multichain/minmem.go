package multichain

// minSlots returns m_min(R, b) of Lemma 2 (spec §4.3), the fewest slots with which the
// problem of remaining lengths r and kept input gradients b has a schedule. At the loss
// every tower input and every tower output of a branch with stages is live (K̃ = K +
// #{r_i ≠ 0}); one more slot is needed for the working value of a backward, unless some
// branch has a single stage (its B_1 needs no extra slot) or some branch without stages
// drops its gradient after the loss (its slot is free for the others).
//
// It takes O(K) time.
func minSlots(r []int, b []bool) int {
	k := len(r)
	kt := k
	spare := true // r = 0⃗
	for _, n := range r {
		if n != 0 {
			kt++
			spare = false
		}
	}
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
