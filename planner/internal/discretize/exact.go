package discretize

import "github.com/chainplan/chainplan"

// Model is the exact memory model of a chainplan.chain/v2 chain in units (docs/rotor.md,
// "The exact memory model"). Slices are indexed by stage ℓ = 1..N; index 0 is unused.
// The methods of Chain read it, and answer conservatively (as version 1 does: every stage
// saves its input and its output, recomputes its whole forward and has no options) when a
// chain has none.
type Model struct {
	InSaved  []bool     // B_ℓ needs a_{ℓ-1}: the stage saved its input
	OutSaved []bool     // B_ℓ needs a_ℓ: the stage saved its output
	UR       []float64  // u_R(ℓ), the recomputation right before B_ℓ
	RT       []int64    // o_R(ℓ), its temporary peak above what it leaves for B_ℓ
	Opts     [][]Option // the operation-level options 1.. of stage ℓ
}

// Option is an operation-level option of a stage in units: what its first forward keeps
// (ABar, ā of the option, output included, held until the backward), the forward's
// temporary peak on top of it (OF), and the recomputation that restores the rest right
// before the backward (UR). A form option (chainplan.StageOption.Form) runs another
// computation of the stage: Form is set, its forward and backward take UF and UB, and its
// backward holds its own ā (ABarB: the rest, less an output it did not save) with its own
// temporaries OB; the other options run the stage's (UF, UB and OB are the stage's, and
// the recomputation restores the stage's ā before the backward).
type Option struct {
	ABar  int64
	OF    int64
	UR    float64
	Form  bool
	UF    float64
	UB    float64
	OB    int64
	ABarB int64
}

// exactOf discretizes the version 2 fields of c. A stage whose output the backward does
// not need keeps ā as two parts with lifetimes of their own, the output a_ℓ and the rest
// ā_ℓ − a_ℓ, each rounded up (so d.ABar[ℓ] becomes their sum): the rest stays to B_ℓ, the
// output goes when no one reads it any more. The last stage whose output the loss consumes
// (ā_L < a_L, docs/formats.md) keeps its ā whole, as version 1 does.
func exactOf(c *chainplan.Chain, d *Chain, up func(int64) int64) *Model {
	n := d.N
	e := &Model{InSaved: make([]bool, n+1), OutSaved: make([]bool, n+1), UR: make([]float64, n+1),
		RT: make([]int64, n+1), Opts: make([][]Option, n+1)}
	for i := range c.Stages {
		s := &c.Stages[i]
		k := i + 1
		consumed := s.SavedBytes < s.OutBytes
		e.InSaved[k] = s.InputSaved()
		e.OutSaved[k] = s.OutputSaved() || consumed
		e.UR[k] = s.Recompute()
		e.RT[k] = up(s.RecomputeTmp())
		if consumed {
			e.RT[k] = up(s.FwdTmpBytes)
		}
		abar := func(saved int64) int64 {
			if e.OutSaved[k] || saved < s.OutBytes {
				return up(saved)
			}
			return d.A[k] + up(saved-s.OutBytes)
		}
		d.ABar[k] = abar(s.SavedBytes)
		for j := range s.Options {
			o := &s.Options[j]
			opt := Option{ABar: abar(o.SavedBytes), OF: up(o.FwdTmpBytes), UR: o.RecomputeTime,
				UF: d.UF[k], UB: d.UB[k], OB: d.OB[k]}
			if o.Form != "" {
				opt.Form, opt.UF, opt.UB, opt.OB = true, *o.FwdTime, *o.BwdTime, up(*o.BwdTmpBytes)
				opt.ABarB = opt.ABar
				if !e.OutSaved[k] {
					opt.ABarB -= d.A[k]
				}
			}
			e.Opts[k] = append(e.Opts[k], opt)
		}
	}
	e.InSaved[n], e.OutSaved[n], e.UR[n] = true, true, d.UF[n]
	return e
}

// InSaved reports whether B_ℓ needs a_{ℓ-1}; always for the loss and for a chain without
// the exact model.
func (d *Chain) InSaved(l int) bool { return d.Model == nil || d.Model.InSaved[l] }

// OutSaved reports whether B_ℓ needs a_ℓ; always for a chain without the exact model.
func (d *Chain) OutSaved(l int) bool { return d.Model == nil || d.Model.OutSaved[l] }

// ABarB returns what F_ℓ^all keeps that B_ℓ still needs after the next stage's backward:
// ā_ℓ, less the output when the stage did not save it.
func (d *Chain) ABarB(l int) int64 {
	if d.OutSaved(l) {
		return d.ABar[l]
	}
	return d.ABar[l] - d.A[l]
}

// Credit returns what F_ℓ^all frees when it is the last reader of its input a_{ℓ-1}: a_{ℓ-1}
// when stage ℓ did not save it and stage ℓ-1's graph does not hold it (pinned: the input
// is the output of a filled graph of stage ℓ-1 that saved it), for stages 2..L only (a_0 is
// the caller's, and the loss's input follows the chain's output convention); else 0. A
// planner that counts the input outside a sub-chain's budget gives the sub-chain this much
// more after F_ℓ^all.
func (d *Chain) Credit(l int, pinned bool) int64 {
	if l < 2 || l >= d.N || d.InSaved(l) || pinned {
		return 0
	}
	return d.A[l-1]
}

// Pinnable reports whether Credit(ℓ, ·) depends on pinned: stage ℓ does not save its input
// and stage ℓ-1 saves its output.
func (d *Chain) Pinnable(l int) bool {
	return l >= 2 && l < d.N && !d.InSaved(l) && d.OutSaved(l-1)
}

// Recompute returns u_R(ℓ), the time of F_ℓ^all run right before B_ℓ when an earlier forward
// recorded the stage's graph: it regenerates the saved tensors and stops there. u_F(ℓ) for
// the loss and for a chain without the exact model.
func (d *Chain) Recompute(l int) float64 {
	if d.Model == nil || l >= d.N {
		return d.UF[l]
	}
	return d.Model.UR[l]
}

// EarlyPeak returns what F_ℓ^all right before B_ℓ (the recomputation that stops at the
// saved tensors, ℓ < N) needs on top of what is in memory: what it leaves for B_ℓ
// (ABarB) and its temporary peak o_R. Without the exact model, ā_ℓ + o_F(ℓ).
func (d *Chain) EarlyPeak(l int) int64 {
	if d.Model == nil || l >= d.N {
		return d.ABar[l] + d.OF[l]
	}
	return d.ABarB(l) + d.Model.RT[l]
}

// Options returns the operation-level options 1.. of stage ℓ (none without the exact model).
func (d *Chain) Options(l int) []Option {
	if d.Model == nil {
		return nil
	}
	return d.Model.Opts[l]
}

// Option returns option j of stage ℓ; option 0 keeps everything (ā_ℓ, o_F(ℓ), nothing to
// recompute).
func (d *Chain) Option(l, j int) Option {
	if j == 0 {
		return Option{ABar: d.ABar[l], OF: d.OF[l], UF: d.UF[l], UB: d.UB[l], OB: d.OB[l], ABarB: d.ABarB(l)}
	}
	return d.Model.Opts[l][j-1]
}
