package simulate

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Issue is one validity error of a sequence. Index is the position of the operation in the
// sequence, or -1 for an error about the sequence as a whole.
type Issue struct {
	Index int          `json:"index"`
	Op    chainplan.Op `json:"op"`
	Msg   string       `json:"message"`
}

func (i Issue) String() string {
	if i.Index < 0 {
		return i.Msg
	}
	return fmt.Sprintf("op %d (%s): %s", i.Index, i.Op, i.Msg)
}

// Report is the outcome of a replay. Peak and Limit are in the chain's units.
type Report struct {
	Valid     bool    `json:"valid"`
	Makespan  float64 `json:"makespan"`
	Peak      int64   `json:"peak"`
	PeakIndex int     `json:"peak_index"` // the operation that reached the peak (-1: the start)
	Limit     int64   `json:"limit"`      // the memory limit replayed against; negative means none
	Issues    []Issue `json:"issues,omitempty"`

	curOp int // the operation being replayed
}

// Err returns nil for a valid replay and otherwise an error listing the issues.
func (r *Report) Err() error {
	if r.Valid {
		return nil
	}
	return IssuesError("sequence", r.Issues)
}

// IssuesError returns an error wrapping chainplan.ErrInvalidPlan that counts the issues of
// an invalid replay of what ("sequence", "schedule") and lists the first five.
func IssuesError[T fmt.Stringer](what string, issues []T) error {
	msg := fmt.Sprintf("invalid %s (%d issues)", what, len(issues))
	for i, is := range issues {
		if i == 5 {
			msg += "; …"
			break
		}
		msg += "; " + is.String()
	}
	return fmt.Errorf("%w: %s", chainplan.ErrInvalidPlan, msg)
}

// Run replays seq on c against a memory limit in c's units (a negative limit checks no
// budget). It reports every issue it finds: an operation whose input is missing, a stage
// out of range, a backward out of order, repeated or missing, and each operation that
// exceeds the limit. After an issue the replay goes on as if the operation had run, so one
// mistake does not hide the next.
//
// The time complexity of Run is O(len(seq) + N).
func Run(c *discretize.Chain, seq []chainplan.Op, limit int64) *Report {
	return run(c, seq, limit, nil, false)
}

// run is Run, calling onStep (when not nil) after each operation in range with what it
// did to the clock and the memory (Trace). With gradHeld, δ_N (c.Grad(N)) is in memory
// from the start: the state of RunFrom, whose last stage is a layer, not a loss.
//
// Validity follows rotor spec §2.5: the sets of plain activations a_i and of ā_i that the
// model says are present. Memory and time follow the executor (liveness.go): copies of the
// activations with their holders, the rest of each ā_i from the forward that fills the
// stage's graph to its backward, and u_R for an F_all right before its backward that
// recomputes a stage an earlier forward recorded.
func run(c *discretize.Chain, seq []chainplan.Op, limit int64, onStep func(Step), gradHeld bool) *Report {
	n := c.N
	inA := make([]bool, n+1)    // a_i present (validity)
	inAbar := make([]bool, n+1) // ā_i present (validity)
	inA[0] = true
	d := n // current gradient index; δ_N has size 0 unless gradHeld
	size := c.A[0]
	if gradHeld {
		size += c.Grad(n)
	}
	r := &Report{Limit: limit, Peak: size, PeakIndex: -1}
	add := func(i int, op chainplan.Op, msg string, args ...any) {
		r.Issues = append(r.Issues, Issue{Index: i, Op: op, Msg: fmt.Sprintf(msg, args...)})
	}
	lastRead, reads := readers(c, seq)
	copies := make(map[int]*copyInfo) // by the index of the forward that made them
	// The graph of each stage: whether it holds its saved tensors, the option it holds
	// them with, and the copies of its output and input it holds.
	filled := make([]bool, n+1)
	option := make([]int, n+1)
	heldOut := make([]int, n+1)
	heldIn := make([]int, n+1)
	recorded := make([]bool, n+1) // a forward of the stage ran
	// a_0 leaves with the first F_none 1 or B 1, as in rotor spec §2.5 (its memory stays
	// with the caller, outside the step, after that).
	a0 := true
	dropInput := func() {
		if a0 {
			a0 = false
			size -= c.A[0]
		}
	}
	release := func(id int) {
		cp := copies[id]
		if cp != nil && cp.live && cp.graph == 0 && cp.lastOp <= r.curOp {
			cp.live = false
			size -= cp.size
		}
	}
	rest := func(l, opt int) int64 { return c.Option(l, opt).ABar - c.A[l] } // ā − a
	var during int64                                                         // what the current operation needs while it runs
	reach := func(i int, op chainplan.Op, peak int64) {
		during = peak
		if peak > r.Peak {
			r.Peak, r.PeakIndex = peak, i
		}
		if limit >= 0 && peak > limit {
			add(i, op, "needs %s, over the limit of %s", unitLabel(c, peak), unitLabel(c, limit))
		}
	}
	for i, op := range seq {
		r.curOp = i
		l := op.Stage
		if l < 1 || l > n {
			add(i, op, "stage %d out of range 1..%d (the loss is stage %d)", l, n, n)
			continue
		}
		start, before := r.Makespan, size
		switch op.Kind {
		case chainplan.FAll, chainplan.FCk, chainplan.FNone:
			if op.Kind == chainplan.FNone {
				if !inA[l-1] {
					if inAbar[l-1] {
						add(i, op, "F_none cannot read ā_%d; it needs the plain activation a_%d", l-1, l-1)
					} else {
						add(i, op, "input a_%d is not in memory", l-1)
					}
				}
			} else if !inA[l-1] && !inAbar[l-1] {
				add(i, op, "input a_%d is not in memory", l-1)
			}
			if op.Option > len(c.Options(l)) || (op.Option > 0 && op.Kind != chainplan.FAll) {
				add(i, op, "stage %d has no option %d", l, op.Option)
				op.Option = 0
			}
			fills := op.Kind == chainplan.FAll && !filled[l]
			// F_all right before its own backward, on a stage an earlier forward recorded:
			// the recomputation stops once it has the saved tensors, and makes a_l only if
			// the stage saved it.
			early := fills && recorded[l] && i+1 < len(seq) && seq[i+1].Kind == chainplan.B && seq[i+1].Stage == l && l < n
			makes := l < n && (!early || c.OutSaved(l))
			var added int64
			if makes {
				added += c.A[l]
			}
			if fills {
				added += rest(l, op.Option)
			}
			if early {
				reach(i, op, size+c.EarlyPeak(l))
			} else {
				reach(i, op, size+added+c.Option(l, op.Option).OF)
			}
			if early {
				r.Makespan += c.Recompute(l)
			} else {
				r.Makespan += c.Option(l, op.Option).UF // a form option's forward has its own time
			}
			recorded[l] = true
			size += added
			if makes {
				copies[i] = &copyInfo{stage: l, size: c.A[l], lastOp: lastRead[i], live: true}
			}
			if fills {
				filled[l], option[l] = true, op.Option
				heldOut[l], heldIn[l] = -1, -1
				if makes && c.OutSaved(l) {
					heldOut[l] = i
					copies[i].graph++
				}
				if in := reads[i]; in >= 0 && c.InSaved(l) && copies[in] != nil && copies[in].live {
					heldIn[l] = in
					copies[in].graph++
				}
			}
			// validity sets, as rotor spec §2.5
			switch op.Kind {
			case chainplan.FAll:
				inAbar[l] = true
			case chainplan.FCk:
				inA[l] = true
			case chainplan.FNone:
				inA[l] = true
				inA[l-1] = false
			}
			if in := reads[i]; in >= 0 {
				release(in)
			} else if in == -1 && op.Kind == chainplan.FNone {
				dropInput()
			}
			if makes {
				release(i)
			}
		case chainplan.B:
			switch {
			case l > d:
				add(i, op, "backward of stage %d already ran", l)
			case l < d:
				add(i, op, "backward out of order: B %d must run first", d)
			}
			if !inAbar[l] {
				add(i, op, "ā_%d is not in memory (no F_all of stage %d since its last use)", l, l)
			}
			if !inA[l-1] && !inAbar[l-1] {
				add(i, op, "input a_%d is not in memory", l-1)
			}
			opt := option[l]
			recompute, form := int64(0), filled[l] && c.Option(l, opt).Form
			ob, ub, held := c.OB[l], c.UB[l], rest(l, 0)
			if form { // another computation of the stage: it recomputes nothing
				ob, ub, held = c.Option(l, opt).OB, c.Option(l, opt).UB, rest(l, opt)
			}
			if filled[l] && opt > 0 && !form {
				if reads[i] == -2 {
					add(i, op, "input a_%d is not in memory for the recomputation of option %d", l-1, opt)
				}
				// The option's recomputation restores ā_l; its temporaries are bounded by
				// the option's o_F.
				size += rest(l, 0) - rest(l, opt)
				r.Makespan += c.Option(l, opt).UR
				recompute = c.Option(l, opt).OF
			}
			reach(i, op, size+max(c.Grad(l-1)+ob, recompute))
			if filled[l] {
				size -= held
				filled[l], option[l] = false, 0
				for _, id := range []int{heldOut[l], heldIn[l]} {
					if cp := copies[id]; id >= 0 && cp != nil {
						cp.graph--
						release(id)
					}
				}
			}
			if reads[i] >= 0 {
				release(reads[i]) // the option's recomputation may have been its last reader
			}
			if l == 1 {
				dropInput()
			}
			inAbar[l] = false
			inA[l-1] = false
			// The gradient δ_l is replaced by δ_{l-1}.
			if l <= d {
				size += c.Grad(l-1) - c.Grad(d)
				d = l - 1
			}
			r.Makespan += ub
		default:
			add(i, op, "unknown operation %q", op.Kind)
			continue
		}
		if onStep != nil {
			onStep(Step{Index: i, Op: op, Start: start, End: r.Makespan, Before: before, During: during, After: size})
		}
	}
	if d != 0 {
		add(-1, chainplan.Op{}, "the sequence ends before the backward of stage %d (backwards %d..1 never ran)", d, d)
	}
	r.Valid = len(r.Issues) == 0
	return r
}

// Replay replays seq on c in exact bytes against limitBytes (negative: no limit), with
// the random-number states the executor keeps for the plan (Chain.ReplayStateBytes) held
// beside every operation: the peak is what the executor holds at most.
func Replay(c *chainplan.Chain, seq []chainplan.Op, limitBytes int64) *Report {
	return ReplayHolding(c, seq, limitBytes, c.ReplayStateBytes(seq))
}

// ReplayHolding replays seq on c in exact bytes against limitBytes (negative: no limit)
// with heldBytes more held from the start to the end (the random-number states of a plan,
// counted on the chain the plan was made from when c is a copy without them: a floating
// plan's conservative chain). The report's peak includes them, its limit is limitBytes.
func ReplayHolding(c *chainplan.Chain, seq []chainplan.Op, limitBytes, heldBytes int64) *Report {
	if heldBytes <= 0 {
		return Run(discretize.Exact(c), seq, limitBytes)
	}
	limit := limitBytes
	if limit >= 0 {
		// A limit below the states leaves nothing for the operations: any operation is over.
		limit = max(0, limit-heldBytes)
	}
	rep := Run(discretize.Exact(c), seq, limit)
	rep.Peak += heldBytes
	rep.Limit = limitBytes
	return rep
}

// unitLabel writes an amount of memory in the chain's units ("24 B" in exact bytes).
func unitLabel(c *discretize.Chain, units int64) string {
	if c.Unit == 1 {
		return fmt.Sprintf("%d B", units)
	}
	return fmt.Sprintf("%d units of %d B", units, c.Unit)
}
