package simulate

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// This file replays the sequences of K towers joined at the loss (specs/multichain.md
// §9.3): the single-chain model of Run for each branch, sizes summed across the branches,
// and the joint loss.

// branch is the replay state of one tower: which activations (a) and saved tensors (ā) are
// in memory, and the index of its current gradient.
type branch struct {
	c      *chainplan.Chain
	inA    []bool // a_q present, q = 0..L
	inAbar []bool // ā_q present, q = 1..L (index 0 unused)
	d      int    // δ_d is in memory; -1 before the loss, when the tower has no gradient yet
	freed  bool   // free_grad dropped δ_0
}

// a returns the size of a_q (and of its gradient δ_q).
func (b *branch) a(q int) int64 {
	if q == 0 {
		return b.c.InputBytes
	}
	return b.c.Stages[q-1].OutBytes
}

// has reports whether a_q is in memory, on its own or inside ā_q.
func (b *branch) has(q int) bool { return b.inA[q] || (q > 0 && b.inAbar[q]) }

// multiReplay is the state of one RunMulti.
type multiReplay struct {
	mc           *chainplan.MultiChain
	bs           []*branch
	size, during int64
	r            *Report
	i            int // the operation being replayed
	op           chainplan.Op
	lossF, lossB bool
}

// RunMulti replays seq, a multichain sequence, on bundle mc in exact bytes against
// limitBytes (negative: no limit) and reports every issue it finds, going on after each as
// Run does.
//
// Memory model: every tower input a_0^(j) is present from the start to the end: it belongs
// to the caller, who holds it through the step (unlike rotor's single chain, where B_1,
// the last operation, frees a_0; here the other towers' backwards come after a tower's
// B_1). The operations of branch j follow Run's rules on that tower's chain otherwise
// (F_all stores ā_q and keeps its input, F_ck stores a_q and keeps its input, F_none stores
// a_q and frees a_{q−1}, which must not be the input, B_q frees ā_q and a_{q−1} and
// replaces δ_q by δ_{q−1}); a backward needs the joint loss to have run. The joint loss's
// F_all (branch 0, stage 0) needs every tower output a_{L_j} (a_0 for a tower without
// stages) and its fwd_tmp_bytes; its B needs the K output gradients and bwd_tmp_bytes on
// top of what is stored, then frees the outputs (their plain copies: an ā that holds one
// stays for its stage's backward; an input stays) and leaves δ_{L_j} for every tower.
// FreeGrad drops δ_0^(j) once branch j's backward is done. At the end every backward and
// the loss must have run, and memory must hold the inputs and exactly the input gradients
// KeepInputGrad keeps: a leftover activation or gradient is an issue.
//
// The time complexity of RunMulti is O(len(seq) + ΣL_j).
func RunMulti(mc *chainplan.MultiChain, seq []chainplan.Op, limitBytes int64) *Report {
	return runMulti(mc, seq, limitBytes, nil)
}

// TraceMulti replays seq on mc as RunMulti does without a limit and returns the memory over
// time, one Step per operation that the replay did not skip, as Trace does for a chain.
func TraceMulti(mc *chainplan.MultiChain, seq []chainplan.Op) ([]Step, *Report) {
	steps := make([]Step, 0, len(seq))
	rep := runMulti(mc, seq, -1, func(s Step) { steps = append(steps, s) })
	return steps, rep
}

func runMulti(mc *chainplan.MultiChain, seq []chainplan.Op, limit int64, onStep func(Step)) *Report {
	m := &multiReplay{mc: mc, bs: make([]*branch, mc.K())}
	for j := range m.bs {
		c := &mc.Branches[j]
		m.bs[j] = &branch{c: c, inA: make([]bool, c.Len()+1), inAbar: make([]bool, c.Len()+1), d: -1}
		m.bs[j].inA[0] = true
		m.size += c.InputBytes
	}
	m.r = &Report{Limit: limit, Peak: m.size, PeakIndex: -1}
	for i, op := range seq {
		m.i, m.op = i, op
		start, before := m.r.Makespan, m.size
		var ran bool
		switch {
		case op.Branch < 0 || op.Branch > len(m.bs):
			m.issue("branch %d out of range 0..%d (0 is the joint loss)", op.Branch, len(m.bs))
		case op.Branch == 0:
			ran = m.loss()
		case op.Kind == chainplan.FreeGrad:
			ran = m.freeGrad(m.bs[op.Branch-1])
		default:
			ran = m.step(m.bs[op.Branch-1])
		}
		if ran && onStep != nil {
			onStep(Step{Index: i, Op: op, Start: start, End: m.r.Makespan, Before: before, During: m.during, After: m.size})
		}
	}
	m.finish()
	m.r.Valid = len(m.r.Issues) == 0
	return m.r
}

func (m *multiReplay) issue(msg string, args ...any) {
	m.r.Issues = append(m.r.Issues, Issue{Index: m.i, Op: m.op, Msg: fmt.Sprintf(msg, args...)})
}

// reach records what the current operation needs while it runs.
func (m *multiReplay) reach(peak int64) {
	m.during = peak
	if peak > m.r.Peak {
		m.r.Peak, m.r.PeakIndex = peak, m.i
	}
	if l := m.r.Limit; l >= 0 && peak > l {
		m.issue("needs %d B, over the limit of %d B", peak, l)
	}
}

// set marks a value present or absent and keeps the memory total.
func (m *multiReplay) set(present []bool, q int, on bool, bytes int64) {
	if present[q] != on {
		present[q] = on
		if on {
			m.size += bytes
		} else {
			m.size -= bytes
		}
	}
}

// loss replays F_all or B of the joint loss.
func (m *multiReplay) loss() bool {
	op, loss := m.op, &m.mc.Loss
	if op.Stage != 0 {
		m.issue("the joint loss is stage 0 of branch 0, not stage %d", op.Stage)
		return false
	}
	switch op.Kind {
	case chainplan.FAll:
		if m.lossF {
			m.issue("the joint loss already ran")
		}
		for j, b := range m.bs {
			if l := b.c.Len(); !b.has(l) {
				m.issue("input a_%d of branch %d is not in memory", l, j+1)
			}
		}
		m.reach(m.size + loss.FwdTmpBytes)
		m.lossF = true
		m.r.Makespan += loss.FwdTime
	case chainplan.B:
		if !m.lossF || m.lossB {
			m.issue("the backward of the joint loss needs its forward first, and runs once")
		}
		var grads int64
		for _, b := range m.bs {
			grads += b.a(b.c.Len())
		}
		m.reach(m.size + grads + loss.BwdTmpBytes)
		if !m.lossB {
			for _, b := range m.bs {
				if l := b.c.Len(); l > 0 {
					m.set(b.inA, l, false, b.a(l))
				}
				b.d = b.c.Len()
			}
			m.size += grads
		}
		m.lossB = true
		m.r.Makespan += loss.BwdTime
	default:
		m.issue("the joint loss runs F_all then B, not %s", op.Kind)
		return false
	}
	return true
}

// freeGrad replays the FreeGrad of branch b.
func (m *multiReplay) freeGrad(b *branch) bool {
	j := m.op.Branch
	switch {
	case b.d != 0:
		m.issue("free_grad of branch %d before its backward finished", j)
	case b.freed:
		m.issue("the input gradient of branch %d was already freed", j)
	case m.mc.Keep(j):
		m.issue("keep_input_grad keeps the input gradient of branch %d", j)
	}
	m.reach(m.size)
	if b.d == 0 && !b.freed {
		b.freed = true
		m.size -= b.a(0)
	}
	return true
}

// step replays an F or B operation of branch b.
func (m *multiReplay) step(b *branch) bool {
	op := m.op
	q, j := op.Stage, op.Branch
	if q < 1 || q > b.c.Len() {
		m.issue("stage %d out of range 1..%d of branch %d", q, b.c.Len(), j)
		return false
	}
	s := b.c.Stages[q-1]
	switch op.Kind {
	case chainplan.FAll, chainplan.FCk:
		if !b.has(q - 1) {
			m.issue("input a_%d of branch %d is not in memory", q-1, j)
		}
		if op.Kind == chainplan.FAll {
			m.reach(m.size + s.SavedBytes + s.FwdTmpBytes)
			m.set(b.inAbar, q, true, s.SavedBytes)
		} else {
			m.reach(m.size + s.OutBytes + s.FwdTmpBytes)
			m.set(b.inA, q, true, s.OutBytes)
		}
		m.r.Makespan += s.FwdTime
	case chainplan.FNone:
		if !b.inA[q-1] {
			m.issue("F_none needs the plain activation a_%d of branch %d in memory", q-1, j)
		}
		if q == 1 {
			m.issue("F_none of stage 1 would free the input of branch %d, which the caller holds: use F_ck", j)
		}
		m.reach(m.size + s.OutBytes + s.FwdTmpBytes)
		m.set(b.inA, q, true, s.OutBytes)
		if q > 1 {
			m.set(b.inA, q-1, false, b.a(q-1))
		}
		m.r.Makespan += s.FwdTime
	case chainplan.B:
		switch {
		case !m.lossB:
			m.issue("backward before the joint loss")
		case q > b.d:
			m.issue("backward of stage %d of branch %d already ran", q, j)
		case q < b.d:
			m.issue("backward out of order: B %d.%d must run first", j, b.d)
		}
		if !b.inAbar[q] {
			m.issue("ā_%d of branch %d is not in memory (no F_all of stage %d since its last use)", q, j, q)
		}
		if !b.has(q - 1) {
			m.issue("input a_%d of branch %d is not in memory", q-1, j)
		}
		m.reach(m.size + b.a(q-1) + s.BwdTmpBytes)
		m.set(b.inAbar, q, false, s.SavedBytes)
		if q > 1 { // the input stays
			m.set(b.inA, q-1, false, b.a(q-1))
		}
		if m.lossB && q <= b.d {
			m.size += b.a(q-1) - b.a(b.d)
			b.d = q - 1
		}
		m.r.Makespan += s.BwdTime
	default:
		m.issue("unknown operation %q", op.Kind)
		return false
	}
	return true
}

// finish reports what the sequence left undone or in memory.
func (m *multiReplay) finish() {
	m.i, m.op = -1, chainplan.Op{}
	if !m.lossB {
		m.issue("the sequence ends before the joint loss's backward")
	}
	for j, b := range m.bs {
		switch {
		case b.d > 0:
			m.issue("the sequence ends before the backward of stage %d of branch %d (backwards %d..1 never ran)", b.d, j+1, b.d)
		case b.d == 0 && !b.freed && !m.mc.Keep(j+1):
			m.issue("the input gradient of branch %d is still in memory at the end: keep_input_grad is false, free it with free_grad", j+1)
		}
		if b.d != 0 {
			continue // reported above; what it left in memory follows from that
		}
		for q := range b.inA {
			if b.inA[q] && q > 0 {
				m.issue("a_%d of branch %d is still in memory at the end", q, j+1)
			}
			if b.inAbar[q] {
				m.issue("ā_%d of branch %d is still in memory at the end", q, j+1)
			}
		}
	}
}
