package offload

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// Schedule is an offloading schedule (spec §5.1): one compute stream runs Compute in
// order, one link runs Transfers in list order (all offloads, then all prefetches).
type Schedule struct {
	Compute   []chainplan.Op
	Transfers []chainplan.Transfer
	// SyncAtLoss times the schedule under OR.3 (spec §4.2): offloads end before B_{L+1}
	// starts and prefetches start after F_{L+1} ends. Without it the junction between
	// the phases is the smallest gap any timing of the two phases allows (spec §5.4,
	// "unsynchronized Ch.3 schedules").
	SyncAtLoss bool
}

// ScheduleOf returns the schedule of an offloading plan (a plan without an offload part
// is a schedule without transfers, timed as synchronized).
func ScheduleOf(p *chainplan.Plan) Schedule {
	s := Schedule{Compute: p.Sequence, SyncAtLoss: true}
	if p.Offload != nil {
		s.Transfers = p.Offload.Transfers
		s.SyncAtLoss = p.Offload.SyncAtLoss
	}
	return s
}

// Issue is one problem a replay found. Op is the compute index it concerns and Transfer
// the transfer index (−1 when none).
type Issue struct {
	Op       int    `json:"op"`
	Transfer int    `json:"transfer"`
	Msg      string `json:"message"`
}

func (i Issue) String() string {
	switch {
	case i.Op >= 0 && i.Transfer >= 0:
		return fmt.Sprintf("op %d, transfer %d: %s", i.Op, i.Transfer, i.Msg)
	case i.Op >= 0:
		return fmt.Sprintf("op %d: %s", i.Op, i.Msg)
	case i.Transfer >= 0:
		return fmt.Sprintf("transfer %d: %s", i.Transfer, i.Msg)
	}
	return i.Msg
}

// tensorOf returns the name of the stored activation of stage l: ā_l when saved, a_l
// otherwise (a_0 is always plain).
func tensorOf(l int, saved bool) chainplan.Tensor {
	return chainplan.Tensor{Stage: l, Saved: saved && l > 0}
}

// StoreAll returns PyTorch's default sequence with the given activations ā_ℓ
// offloaded: each right after the forward that produces it (a_0 from time 0) and
// prefetched right before B_{ℓ+1}, its first reader after the loss (spec §5.1, "Ch.3
// schedules"). off[ℓ] marks ā_ℓ, ℓ = 0..L.
func StoreAll(c *units.Chain, off []bool, sync bool) Schedule {
	l := c.N - 1
	s := Schedule{Compute: chainplan.StoreAllSequence(l), SyncAtLoss: sync}
	for k := 0; k <= l; k++ {
		if off[k] {
			// F_k is op k−1; a_0 has no producer.
			s.Transfers = append(s.Transfers, chainplan.Transfer{Dir: chainplan.TransferOffload,
				Tensor: tensorOf(k, true), Bytes: int64(c.ABar[k]), Anchor: k - 1})
		}
	}
	for k := l; k >= 0; k-- {
		if off[k] {
			// B_ℓ is op (L+1) + (L+1−ℓ); ā_k is first read by B_{k+1}.
			s.Transfers = append(s.Transfers, chainplan.Transfer{Dir: chainplan.TransferPrefetch,
				Tensor: tensorOf(k, true), Bytes: int64(c.ABar[k]), Anchor: 2*(l+1) - (k + 1)})
		}
	}
	return s
}

// withTransfers returns the analysed compute sequence with the given stored activations
// offloaded: each right after the operation that produced it (a0 from time 0) and
// prefetched before its first reader after the loss. sel lists instance ids of the
// analysis; the result is in link order.
func withTransfers(lg *Analysis, sel []int, sync bool) Schedule {
	s := Schedule{Compute: lg.Ops, SyncAtLoss: sync}
	type pre struct{ inst, before int }
	var pres []pre
	for _, id := range sortedByProducer(lg, sel) {
		in := &lg.Insts[id]
		s.Transfers = append(s.Transfers, chainplan.Transfer{Dir: chainplan.TransferOffload,
			Tensor: in.Tensor, Bytes: int64(in.Size), Anchor: in.Producer})
		for _, r := range in.Readers {
			if r > lg.Loss {
				pres = append(pres, pre{id, r})
				break
			}
		}
	}
	// Prefetches in the order of their readers, which is their order on the link.
	for i := 1; i < len(pres); i++ {
		for j := i; j > 0 && pres[j].before < pres[j-1].before; j-- {
			pres[j], pres[j-1] = pres[j-1], pres[j]
		}
	}
	for _, p := range pres {
		in := &lg.Insts[p.inst]
		s.Transfers = append(s.Transfers, chainplan.Transfer{Dir: chainplan.TransferPrefetch,
			Tensor: in.Tensor, Bytes: int64(in.Size), Anchor: p.before})
	}
	return s
}

// sortedByProducer returns the instance ids sorted by producing operation (a stable
// insertion sort: the lists are short).
func sortedByProducer(lg *Analysis, ids []int) []int {
	out := append([]int(nil), ids...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && lg.Insts[out[j]].Producer < lg.Insts[out[j-1]].Producer; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
