package offload

import (
	"fmt"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// Instance is one stored instance of an activation: a tensor between the operation that
// produced it and the operation that frees it (a tensor recomputed later is a new
// instance).
type Instance struct {
	Tensor   chainplan.Tensor
	Size     float64
	Producer int   // compute index; −1 for the chain input
	Freer    int   // compute index of the operation that frees it; −1: never freed
	Readers  []int // compute indices of the operations that read it, in order
	Off, Pre int   // transfer indices of its offload and prefetch; −1: none
}

// AliveDuring reports whether the instance is stored while operation k runs.
func (in *Instance) AliveDuring(k int) bool {
	return in.Producer < k && (in.Freer < 0 || in.Freer >= k)
}

// AliveAfter reports whether the instance is stored right after operation k ends.
func (in *Instance) AliveAfter(k int) bool {
	return in.Producer <= k && (in.Freer < 0 || in.Freer > k)
}

// xfer is a transfer resolved against the instances.
type xfer struct {
	dir    chainplan.TransferDir
	inst   int // −1 when the transfer does not resolve
	size   float64
	anchor int
}

// Analysis is the outcome of the logical pass of spec §5.2: the validity of the operations
// and transfers, the stored instances and what each operation reads, the static memory S_k
// before each operation, its transient T_k (output and overhead) and its duration d_k. It
// does not depend on timing. The heuristics (autocapper.go, opportunist.go) read it to choose what to
// offload; the simulator times and checks the schedule from it.
type Analysis struct {
	Ops    []chainplan.Op
	Loss   int // λ, the index of F_{L+1}; −1 if missing
	Insts  []Instance
	Inputs [][]int // the instances each operation reads
	Issues []Issue // what makes the schedule invalid, independently of timing
	dur    []float64
	static []float64 // S_k: stored data (gradient included) before operation k
	trans  []float64 // T_k
	xfers  []xfer
	// offDuring[k] lists the offloaded instances stored while op k runs, which are also
	// those stored in the gap before op k.
	offDuring [][]int
}

func (lg *Analysis) addIssue(op, tr int, format string, args ...any) {
	lg.Issues = append(lg.Issues, Issue{Op: op, Transfer: tr, Msg: fmt.Sprintf(format, args...)})
}

// Analyze runs the logical pass of s on c (sizes in bytes).
//
// Rules (spec §1.3, §5.2): F_all and F_ck read a_{ℓ−1} (or ā_{ℓ−1} when the plain one is
// not stored) and keep it; F_none reads the plain a_{ℓ−1} and frees it; B_ℓ reads ā_ℓ, δ_ℓ
// and its input, frees ā_ℓ, δ_ℓ and a plain a_{ℓ−1} but keeps ā_{ℓ−1} for B_{ℓ−1}
// (pitfall 6). The gradient of the current backward is always stored (δ_{L+1} = 0).
func Analyze(c *units.Chain, s Schedule) *Analysis {
	n := c.N
	ops := s.Compute
	lg := &Analysis{
		Ops: ops, Loss: -1,
		dur: make([]float64, len(ops)), static: make([]float64, len(ops)), trans: make([]float64, len(ops)),
		Inputs: make([][]int, len(ops)),
	}
	curA := make([]int, n+1)    // instance of the plain a_ℓ, −1 if not stored
	curAbar := make([]int, n+1) // instance of ā_ℓ
	for i := range curA {
		curA[i], curAbar[i] = -1, -1
	}
	lg.Insts = append(lg.Insts, Instance{Tensor: tensorOf(0, false), Size: c.A[0], Producer: -1, Freer: -1, Off: -1, Pre: -1})
	curA[0] = 0
	stored := c.A[0]
	d := n // current gradient δ_d; δ_n has size 0
	produce := func(k, l int, saved bool) {
		cur := curA
		size := c.A[l]
		if saved && l > 0 {
			cur, size = curAbar, c.ABar[l]
		}
		if cur[l] >= 0 {
			lg.addIssue(k, -1, "%s is computed while it is still stored", tensorOf(l, saved))
			return
		}
		cur[l] = len(lg.Insts)
		lg.Insts = append(lg.Insts, Instance{Tensor: tensorOf(l, saved), Size: size, Producer: k, Freer: -1, Off: -1, Pre: -1})
		stored += size
	}
	free := func(k int, cur []int, l int) {
		if id := cur[l]; id >= 0 {
			lg.Insts[id].Freer = k
			stored -= lg.Insts[id].Size
			cur[l] = -1
		}
	}
	read := func(k, id int) {
		lg.Insts[id].Readers = append(lg.Insts[id].Readers, k)
		lg.Inputs[k] = append(lg.Inputs[k], id)
	}
	// input returns the instance F_ℓ or B_ℓ reads as its input: the plain a_{ℓ−1} if
	// stored, else ā_{ℓ−1}.
	input := func(l int) int {
		if curA[l-1] >= 0 {
			return curA[l-1]
		}
		return curAbar[l-1]
	}
	for k, op := range ops {
		l := op.Stage
		lg.static[k] = stored + c.Delta(d)
		if l < 1 || l > n {
			lg.addIssue(k, -1, "stage %d out of range 1..%d (the loss is stage %d)", l, n, n)
			continue
		}
		switch op.Kind {
		case chainplan.FAll, chainplan.FCk:
			in := input(l)
			if in < 0 {
				lg.addIssue(k, -1, "%s: input a_%d is not stored", op, l-1)
			} else {
				read(k, in)
			}
			saved := op.Kind == chainplan.FAll
			out := c.A[l]
			if saved {
				out = c.ABar[l]
			}
			lg.trans[k], lg.dur[k] = out+c.OF[l], c.UF[l]
			produce(k, l, saved)
			if l == n && saved {
				if lg.Loss >= 0 {
					lg.addIssue(k, -1, "the loss forward runs twice (first at op %d)", lg.Loss)
				} else {
					lg.Loss = k
				}
			}
		case chainplan.FNone:
			in := curA[l-1]
			switch {
			case in >= 0:
				read(k, in)
			case curAbar[l-1] >= 0:
				lg.addIssue(k, -1, "%s cannot read ā_%d; it needs the plain a_%d", op, l-1, l-1)
			default:
				lg.addIssue(k, -1, "%s: input a_%d is not stored", op, l-1)
			}
			lg.trans[k], lg.dur[k] = c.A[l]+c.OF[l], c.UF[l]
			free(k, curA, l-1)
			produce(k, l, false)
		case chainplan.B:
			switch {
			case l > d:
				lg.addIssue(k, -1, "backward of stage %d already ran", l)
			case l < d:
				lg.addIssue(k, -1, "backward out of order: B %d must run first", d)
			}
			if curAbar[l] < 0 {
				lg.addIssue(k, -1, "%s: ā_%d is not stored", op, l)
			} else {
				read(k, curAbar[l])
			}
			if in := input(l); in < 0 {
				lg.addIssue(k, -1, "%s: input a_%d is not stored", op, l-1)
			} else {
				read(k, in)
			}
			lg.trans[k], lg.dur[k] = c.Delta(l-1)+c.OB[l], c.UB[l]
			free(k, curAbar, l)
			free(k, curA, l-1)
			if l <= d {
				d = l - 1
			}
		default:
			lg.addIssue(k, -1, "unknown operation %q", op.Kind)
		}
	}
	if d != 0 {
		lg.addIssue(-1, -1, "the sequence ends before the backward of stage %d", d)
	}
	if lg.Loss < 0 {
		lg.addIssue(-1, -1, "the sequence has no loss forward (F_all %d)", n)
	} else if lg.Loss+1 >= len(ops) || ops[lg.Loss+1] != (chainplan.Op{Kind: chainplan.B, Stage: n}) {
		lg.addIssue(lg.Loss, -1, "the loss forward must be followed at once by B %d", n)
	}
	for id := range lg.Insts {
		if in := &lg.Insts[id]; in.Freer < 0 && d == 0 {
			lg.addIssue(-1, -1, "%s is still stored at the end", in.Tensor)
		}
	}
	lg.resolveTransfers(s.Transfers)
	return lg
}

// resolveTransfers ties every transfer to the instance it moves and checks the static
// rules: offloads first on the link, anchored in the forward phase; each instance
// offloaded and prefetched at most once; a prefetch anchored after the loss, before the
// first reader of its tensor in the backward phase.
func (lg *Analysis) resolveTransfers(ts []chainplan.Transfer) {
	lg.xfers = make([]xfer, len(ts))
	n := len(lg.Ops)
	sawPrefetch := false
	for j, t := range ts {
		x := xfer{dir: t.Dir, inst: -1, anchor: t.Anchor}
		lg.xfers[j] = x
		switch t.Dir {
		case chainplan.TransferOffload:
			if sawPrefetch {
				lg.addIssue(-1, j, "offload %s after a prefetch: the link runs all offloads first", t.Tensor)
				continue
			}
			if lg.Loss >= 0 && t.Anchor >= lg.Loss || t.Anchor < -1 || t.Anchor >= n {
				lg.addIssue(-1, j, "offload %s after op %d: offloads start in the forward phase, before the loss (op %d)",
					t.Tensor, t.Anchor, lg.Loss)
				continue
			}
			id := lg.InstAfter(t.Tensor, t.Anchor)
			if id < 0 {
				lg.addIssue(-1, j, "offload %s after op %d: the tensor is not stored then", t.Tensor, t.Anchor)
				continue
			}
			in := &lg.Insts[id]
			if in.Off >= 0 {
				lg.addIssue(-1, j, "%s is offloaded twice (first by transfer %d)", t.Tensor, in.Off)
				continue
			}
			in.Off = j
			lg.xfers[j].inst = id
		case chainplan.TransferPrefetch:
			sawPrefetch = true
			if t.Anchor <= lg.Loss || t.Anchor >= n {
				lg.addIssue(-1, j, "prefetch %s before op %d: prefetches end in the backward phase, after the loss (op %d)",
					t.Tensor, t.Anchor, lg.Loss)
				continue
			}
			id := lg.instBefore(t.Tensor, t.Anchor)
			if id < 0 || lg.Insts[id].Off < 0 {
				lg.addIssue(-1, j, "prefetch %s before op %d: no offloaded copy of it is stored then", t.Tensor, t.Anchor)
				continue
			}
			in := &lg.Insts[id]
			if in.Pre >= 0 {
				lg.addIssue(-1, j, "%s is prefetched twice (first by transfer %d)", t.Tensor, in.Pre)
				continue
			}
			in.Pre = j
			lg.xfers[j].inst = id
		default:
			lg.addIssue(-1, j, "unknown transfer direction %q", t.Dir)
			continue
		}
		in := &lg.Insts[lg.xfers[j].inst]
		lg.xfers[j].size = in.Size
		if float64(t.Bytes) != in.Size {
			lg.addIssue(-1, j, "%s has %.0f bytes, the transfer says %d", t.Tensor, in.Size, t.Bytes)
		}
	}
	for id := range lg.Insts {
		in := &lg.Insts[id]
		if in.Off < 0 {
			continue
		}
		r := lg.FirstReaderAfter(id, lg.Loss)
		switch {
		case r < 0:
		case in.Pre < 0:
			lg.addIssue(r, in.Off, "%s is read after the loss but never prefetched", in.Tensor)
		case r < lg.xfers[in.Pre].anchor:
			lg.addIssue(r, in.Pre, "%s is read before its prefetch completes (before op %d)", in.Tensor, lg.xfers[in.Pre].anchor)
		}
	}
	lg.offDuring = make([][]int, n)
	for k := 0; k < n; k++ {
		for id := range lg.Insts {
			if in := &lg.Insts[id]; in.Off >= 0 && in.AliveDuring(k) {
				lg.offDuring[k] = append(lg.offDuring[k], id)
			}
		}
	}
}

// FirstReaderAfter returns the first operation after k that reads the instance, or −1.
func (lg *Analysis) FirstReaderAfter(id, k int) int {
	for _, r := range lg.Insts[id].Readers {
		if r > k {
			return r
		}
	}
	return -1
}

// InstAfter returns the instance of t stored right after operation k (k = −1: at time 0),
// or −1.
func (lg *Analysis) InstAfter(t chainplan.Tensor, k int) int {
	for id := range lg.Insts {
		if in := &lg.Insts[id]; in.Tensor == t && in.AliveAfter(k) {
			return id
		}
	}
	return -1
}

// instBefore returns the instance of t stored while operation k runs (it may be the one
// k frees).
func (lg *Analysis) instBefore(t chainplan.Tensor, k int) int {
	for id := range lg.Insts {
		if in := &lg.Insts[id]; in.Tensor == t && in.AliveDuring(k) {
			return id
		}
	}
	return -1
}

// PeakNoTransfer returns max_k S_k + T_k, the peak of the sequence without transfers.
func (lg *Analysis) PeakNoTransfer() float64 {
	var p float64
	if len(lg.Insts) > 0 {
		p = lg.Insts[0].Size
	}
	for k := range lg.Ops {
		p = max(p, lg.static[k]+lg.trans[k])
	}
	return p
}

// Reads reports whether operation k reads the instance.
func (lg *Analysis) Reads(k, id int) bool { return slices.Contains(lg.Inputs[k], id) }
