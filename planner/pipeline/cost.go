package pipeline

// This file is the one definition of what an operation costs in the model: the duration
// of each operation of a stage and the memory of each device. The validator checks plans
// against it and planner/pipesim simulates schedules with it, so that a plan and its
// simulation cannot disagree on the model. The functions sum the layers afresh rather than
// reading the Problem's prefix sums, which the planners use: the validator must not share
// the planners' arithmetic.

// OpDuration returns the duration of operation kind of stage s in pr's model: F = Σ u_F and
// B = Σ u_B over the stage's layers (the loss folded into the last layer), CF = CB =
// a_last/β, the transfer of the stage's output (or of its gradient) to the next stage.
func OpDuration(pr *Problem, s Stage, kind OpKind) float64 {
	var d float64
	switch kind {
	case F, B:
		for l := s.First; l <= s.Last; l++ {
			if kind == F {
				d += pr.Layer(l).Fwd
			} else {
				d += pr.Layer(l).Bwd
			}
		}
	case CF, CB:
		d = float64(pr.Layer(s.Last).Out) / pr.Options().Bandwidth
	}
	return d
}

// StoredBytes returns ā of stage s in pr's model: the bytes one mini-batch in flight keeps
// on the stage's device from the start of its forward to the end of its backward. Under
// ActivationsInput it is Σ a_{ℓ−1} over the stage's layers (the paper's), under
// ActivationsSaved the stage input a_{first−1} plus the layers' saved_bytes.
func StoredBytes(pr *Problem, s Stage) int64 {
	var stored int64
	for l := s.First; l <= s.Last; l++ {
		if pr.Options().ActivationModel == ActivationsInput {
			stored += pr.Out(l - 1)
		} else {
			stored += pr.Layer(l).Saved
		}
	}
	if pr.Options().ActivationModel != ActivationsInput {
		stored += pr.Out(s.First - 1)
	}
	return stored
}

// Crosses reports whether the output of stages[k] goes to another device: stage k+1 exists
// and is on another device, so that the boundary costs a CF and a CB on a link and a buffer
// on both sides.
func Crosses(stages []Stage, k int) bool {
	return k+1 < len(stages) && stages[k].GPU != stages[k+1].GPU
}

// StaticBytes returns the memory of each of pr's devices that does not depend on the
// mini-batches in flight: WeightCopies copies of the weights of the stages it holds, and
// for each boundary that crosses devices one buffer for the activation and one for its
// gradient (2·a_last) on both sides. The slice has one value per device; stages must name
// devices in 0..GPUs−1.
func StaticBytes(pr *Problem, stages []Stage) []int64 {
	static := make([]int64, pr.Options().GPUs)
	for k, s := range stages {
		var w int64
		for l := s.First; l <= s.Last; l++ {
			w += pr.Layer(l).Param
		}
		static[s.GPU] += int64(pr.Options().WeightCopies) * w
		if Crosses(stages, k) {
			buf := 2 * pr.Layer(s.Last).Out
			static[s.GPU] += buf
			static[stages[k+1].GPU] += buf
		}
	}
	return static
}
