package pipesim

// opKind is the kind of a task.
type opKind uint8

const (
	kF  opKind = iota // forward of one micro-batch at one stage
	kB                // backward at one stage: one micro-batch, or TiMePReSt's whole mini-batch
	kCF               // transfer of a stage's output to the next stage
	kCB               // transfer of a gradient back to a stage from the next one
)

func (k opKind) String() string { return [...]string{"F", "B", "CF", "CB"}[k] }

// task is one unit of work. unit is the micro-batch (0-based, over the whole run: mini-batch
// unit/N, micro-batch unit%N within it), except for TiMePReSt's B and CB, whose unit is the
// mini-batch. The CF and CB of boundary s carry stage s's output and its gradient.
type task struct {
	kind  opKind
	stage int32
	unit  int32
}

// minibatchUnits reports whether the schedule's backward (and its gradient transfer) covers
// a whole mini-batch rather than one micro-batch.
func (s *sim) minibatchUnits() bool { return s.o.Schedule == TiMePReSt }

// duration returns how long t lasts.
func (s *sim) duration(t task) float64 {
	switch t.kind {
	case kF:
		return s.fDur[t.stage]
	case kB:
		return s.bDur[t.stage] + s.rDur[t.stage]
	case kCF:
		return s.cfDur[t.stage]
	}
	return s.cbDur[t.stage]
}

// ready reports whether t's inputs are there: everything it depends on has ended at or
// before now. A periodic forward entering the pipeline before its release time is not ready;
// a wake-up is scheduled at that time.
func (s *sim) ready(t task, r int) bool {
	st, S := int(t.stage), s.S
	u := int(t.unit)
	switch t.kind {
	case kF:
		if st == 0 {
			if s.paced {
				if rel := float64(u) * s.planPeriod; s.now < rel {
					s.wakeAt(rel, r)
					return false
				}
			}
		} else if s.fwdLink[st-1] >= 0 {
			if s.cfEnd[u*S+st-1] < 0 {
				return false
			}
		} else if s.fEnd[u*S+st-1] < 0 {
			return false
		}
		if s.o.Schedule == TwoBW {
			// The forward of mini-batch k (0-based) uses the weights after k−1 updates:
			// this stage must have made them (never binding when N ≥ S−1).
			if k := u / s.N; int(s.cur[st]) < k-1 {
				return false
			}
		}
		return true
	case kB:
		if st == S-1 {
			if s.minibatchUnits() {
				return int(s.fLastCount[u]) == s.N
			}
			return s.fEnd[u*S+st] >= 0
		}
		if s.bwdLink[st] >= 0 {
			return s.cbEnd[u*S+st] >= 0
		}
		return s.bEnd[u*S+st+1] >= 0
	case kCF:
		return s.fEnd[u*S+st] >= 0
	}
	return s.bEnd[u*S+st+1] >= 0 // kCB
}

// dependents marks the resources that t's end may let start, and queues t's transfer on
// a first-come link.
func (s *sim) dependents(t task) {
	st := int(t.stage)
	switch t.kind {
	case kF:
		if l := s.fwdLink[st]; l >= 0 {
			s.enqueue(l, task{kCF, t.stage, t.unit})
		} else if st+1 < s.S {
			s.mark(s.dev[st+1])
		}
	case kCF:
		s.mark(s.dev[st+1])
	case kB:
		if st > 0 {
			if l := s.bwdLink[st-1]; l >= 0 {
				s.enqueue(l, task{kCB, t.stage - 1, t.unit})
			} else {
				s.mark(s.dev[st-1])
			}
		}
	case kCB:
		s.mark(s.dev[st])
	}
}
