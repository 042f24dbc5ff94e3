package chainplan

// The random-number states an executor holds for a plan (Stage.ReplayBytes): a stage that
// draws random numbers (dropout) and that the plan runs forward more than once, or with an
// operation-level option (which recomputes part of it before its backward), keeps the
// state its first forward started with, from that forward to the end of the step, so that
// every later forward draws what the first did (docs/executors.md, "RNG states"). A
// store-all plan keeps none. The planners' memory model has no place for bytes held from
// one operation to a later one, so the states are counted once per plan, on top of its
// peak, by the one path every single-chain plan goes through (internal/service.Solve).

// ReplayStateBytes returns the bytes of the random-number states the executor keeps for a
// plan of c running seq: the sum of ReplayBytes over the stages seq runs forward more than
// once or with an option, plus one state more (the largest), the one a forward takes for
// a moment beside them (the state before a first forward, kept only if the stage drew
// random numbers; the generator's own state that torch.random.fork_rng saves around a
// recomputation; the state read to tell whether a forward drew any). The kept states are
// all held at once by the end of the forward phase, so the sum is what the plan's peak
// may hold beside its operations' own memory. 0 for a chain whose stages draw nothing (a
// chain without the field) or a plan that recomputes none of its random stages.
// Operations of a multichain branch are not counted.
func (c *Chain) ReplayStateBytes(seq []Op) int64 {
	runs := make([]int, len(c.Stages)+1)
	option := make([]bool, len(c.Stages)+1)
	for _, op := range seq {
		if op.Branch != 0 || op.Stage < 1 || op.Stage > len(c.Stages) || op.Kind == B || !op.Kind.Valid() {
			continue
		}
		runs[op.Stage]++
		if op.Kind == FAll && op.Option > 0 {
			option[op.Stage] = true
		}
	}
	var total, largest int64
	for i, s := range c.Stages {
		largest = max(largest, s.ReplayBytes)
		if s.ReplayBytes > 0 && (runs[i+1] > 1 || option[i+1]) {
			total += s.ReplayBytes
		}
	}
	if total == 0 {
		return 0
	}
	return total + largest
}
