package pofo

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// inst is one stored instance of an activation: a tensor between the operation that
// produced it and the operation that frees it (a tensor recomputed later is a new
// instance).
type inst struct {
	t        chainplan.Tensor
	size     float64
	producer int   // compute index; −1 for the chain input
	freer    int   // compute index of the operation that frees it; −1: never freed
	readers  []int // compute indices of the operations that read it
	off, pre int   // transfer indices of its offload and prefetch; −1: none
}

// aliveDuring reports whether the instance is stored while operation k runs.
func (in *inst) aliveDuring(k int) bool {
	return in.producer < k && (in.freer < 0 || in.freer >= k)
}

// aliveAfter reports whether the instance is stored right after operation k ends.
func (in *inst) aliveAfter(k int) bool {
	return in.producer <= k && (in.freer < 0 || in.freer > k)
}

// xfer is a transfer resolved against the instances.
type xfer struct {
	dir    chainplan.TransferDir
	inst   int // −1 when the transfer does not resolve
	size   float64
	anchor int
}

// logical is the outcome of the logical pass of spec §5.2: the validity of the operations
// and transfers, the static memory S_k before each operation, its transient T_k (output and
// overhead) and its duration d_k. It does not depend on timing.
type logical struct {
	ops    []chainplan.Op
	loss   int // λ, the index of F_{L+1}; −1 if missing
	dur    []float64
	static []float64 // S_k: stored data (gradient included) before operation k
	trans  []float64 // T_k
	insts  []inst
	inputs [][]int // instances each operation reads
	xfers  []xfer
	// offDuring[k] lists the offloaded instances stored while op k runs, which are also
	// those stored in the gap before op k.
	offDuring [][]int
	issues    []Issue
}

func (lg *logical) addIssue(op, tr int, format string, args ...any) {
	lg.issues = append(lg.issues, Issue{Op: op, Transfer: tr, Msg: fmt.Sprintf(format, args...)})
}

// analyze runs the logical pass of s on c (sizes in bytes).
//
// Rules (spec §1.3, §5.2): F_all and F_ck read a_{ℓ−1} (or ā_{ℓ−1} when the plain one is
// not stored) and keep it; F_none reads the plain a_{ℓ−1} and frees it; B_ℓ reads ā_ℓ, δ_ℓ
// and its input, frees ā_ℓ, δ_ℓ and a plain a_{ℓ−1} but keeps ā_{ℓ−1} for B_{ℓ−1}
// (pitfall 6). The gradient of the current backward is always stored (δ_{L+1} = 0).
func analyze(c *chain, s Schedule) *logical {
	n := c.n
	ops := s.Compute
	lg := &logical{
		ops: ops, loss: -1,
		dur: make([]float64, len(ops)), static: make([]float64, len(ops)), trans: make([]float64, len(ops)),
		inputs: make([][]int, len(ops)),
	}
	curA := make([]int, n+1)    // instance of the plain a_ℓ, −1 if not stored
	curAbar := make([]int, n+1) // instance of ā_ℓ
	for i := range curA {
		curA[i], curAbar[i] = -1, -1
	}
	lg.insts = append(lg.insts, inst{t: tensorOf(0, false), size: c.a[0], producer: -1, freer: -1, off: -1, pre: -1})
	curA[0] = 0
	stored := c.a[0]
	d := n // current gradient δ_d; δ_n has size 0
	produce := func(k, l int, saved bool) {
		cur := curA
		size := c.a[l]
		if saved && l > 0 {
			cur, size = curAbar, c.abar[l]
		}
		if cur[l] >= 0 {
			lg.addIssue(k, -1, "%s is computed while it is still stored", tensorOf(l, saved))
			return
		}
		cur[l] = len(lg.insts)
		lg.insts = append(lg.insts, inst{t: tensorOf(l, saved), size: size, producer: k, freer: -1, off: -1, pre: -1})
		stored += size
	}
	free := func(k int, cur []int, l int) {
		if id := cur[l]; id >= 0 {
			lg.insts[id].freer = k
			stored -= lg.insts[id].size
			cur[l] = -1
		}
	}
	read := func(k, id int) {
		lg.insts[id].readers = append(lg.insts[id].readers, k)
		lg.inputs[k] = append(lg.inputs[k], id)
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
		lg.static[k] = stored + c.delta(d)
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
			out := c.a[l]
			if saved {
				out = c.abar[l]
			}
			lg.trans[k], lg.dur[k] = out+c.oF[l], c.uF[l]
			produce(k, l, saved)
			if l == n && saved {
				if lg.loss >= 0 {
					lg.addIssue(k, -1, "the loss forward runs twice (first at op %d)", lg.loss)
				} else {
					lg.loss = k
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
			lg.trans[k], lg.dur[k] = c.a[l]+c.oF[l], c.uF[l]
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
			lg.trans[k], lg.dur[k] = c.delta(l-1)+c.oB[l], c.uB[l]
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
	if lg.loss < 0 {
		lg.addIssue(-1, -1, "the sequence has no loss forward (F_all %d)", n)
	} else if lg.loss+1 >= len(ops) || ops[lg.loss+1] != (chainplan.Op{Kind: chainplan.B, Stage: n}) {
		lg.addIssue(lg.loss, -1, "the loss forward must be followed at once by B %d", n)
	}
	for id := range lg.insts {
		if in := &lg.insts[id]; in.freer < 0 && d == 0 {
			lg.addIssue(-1, -1, "%s is still stored at the end", in.t)
		}
	}
	lg.resolveTransfers(s.Transfers)
	return lg
}

// resolveTransfers ties every transfer to the instance it moves and checks the static
// rules: offloads first on the link, anchored in the forward phase; each instance
// offloaded and prefetched at most once; a prefetch anchored after the loss, before the
// first reader of its tensor in the backward phase.
func (lg *logical) resolveTransfers(ts []chainplan.Transfer) {
	lg.xfers = make([]xfer, len(ts))
	n := len(lg.ops)
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
			if lg.loss >= 0 && t.Anchor >= lg.loss || t.Anchor < -1 || t.Anchor >= n {
				lg.addIssue(-1, j, "offload %s after op %d: offloads start in the forward phase, before the loss (op %d)",
					t.Tensor, t.Anchor, lg.loss)
				continue
			}
			id := lg.instAfter(t.Tensor, t.Anchor)
			if id < 0 {
				lg.addIssue(-1, j, "offload %s after op %d: the tensor is not stored then", t.Tensor, t.Anchor)
				continue
			}
			in := &lg.insts[id]
			if in.off >= 0 {
				lg.addIssue(-1, j, "%s is offloaded twice (first by transfer %d)", t.Tensor, in.off)
				continue
			}
			in.off = j
			lg.xfers[j].inst = id
		case chainplan.TransferPrefetch:
			sawPrefetch = true
			if t.Anchor <= lg.loss || t.Anchor >= n {
				lg.addIssue(-1, j, "prefetch %s before op %d: prefetches end in the backward phase, after the loss (op %d)",
					t.Tensor, t.Anchor, lg.loss)
				continue
			}
			id := lg.instBefore(t.Tensor, t.Anchor)
			if id < 0 || lg.insts[id].off < 0 {
				lg.addIssue(-1, j, "prefetch %s before op %d: no offloaded copy of it is stored then", t.Tensor, t.Anchor)
				continue
			}
			in := &lg.insts[id]
			if in.pre >= 0 {
				lg.addIssue(-1, j, "%s is prefetched twice (first by transfer %d)", t.Tensor, in.pre)
				continue
			}
			in.pre = j
			lg.xfers[j].inst = id
		default:
			lg.addIssue(-1, j, "unknown transfer direction %q", t.Dir)
			continue
		}
		in := &lg.insts[lg.xfers[j].inst]
		lg.xfers[j].size = in.size
		if float64(t.Bytes) != in.size {
			lg.addIssue(-1, j, "%s has %.0f bytes, the transfer says %d", t.Tensor, in.size, t.Bytes)
		}
	}
	for id := range lg.insts {
		in := &lg.insts[id]
		if in.off < 0 {
			continue
		}
		r := lg.firstReaderAfter(id, lg.loss)
		switch {
		case r < 0:
		case in.pre < 0:
			lg.addIssue(r, in.off, "%s is read after the loss but never prefetched", in.t)
		case r < lg.xfers[in.pre].anchor:
			lg.addIssue(r, in.pre, "%s is read before its prefetch completes (before op %d)", in.t, lg.xfers[in.pre].anchor)
		}
	}
	lg.offDuring = make([][]int, n)
	for k := 0; k < n; k++ {
		for id := range lg.insts {
			if in := &lg.insts[id]; in.off >= 0 && in.aliveDuring(k) {
				lg.offDuring[k] = append(lg.offDuring[k], id)
			}
		}
	}
}

// firstReaderAfter returns the first operation after k that reads the instance, or −1.
func (lg *logical) firstReaderAfter(id, k int) int {
	for _, r := range lg.insts[id].readers {
		if r > k {
			return r
		}
	}
	return -1
}

// instAfter returns the instance of t stored right after operation k (k = −1: at time 0).
func (lg *logical) instAfter(t chainplan.Tensor, k int) int {
	for id := range lg.insts {
		if in := &lg.insts[id]; in.t == t && in.aliveAfter(k) {
			return id
		}
	}
	return -1
}

// instBefore returns the instance of t stored while operation k runs (it may be the one
// k frees).
func (lg *logical) instBefore(t chainplan.Tensor, k int) int {
	for id := range lg.insts {
		if in := &lg.insts[id]; in.t == t && in.aliveDuring(k) {
			return id
		}
	}
	return -1
}

// peakNoTransfer returns max_k S_k + T_k, the peak of the sequence without transfers.
func (lg *logical) peakNoTransfer() float64 {
	var p float64
	if len(lg.insts) > 0 {
		p = lg.insts[0].size
	}
	for k := range lg.ops {
		p = max(p, lg.static[k]+lg.trans[k])
	}
	return p
}
