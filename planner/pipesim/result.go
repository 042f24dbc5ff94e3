package pipesim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chainplan/chainplan/pipeplan"
)

// Format is the format tag of a simulation's result document.
const Format = "chainplan.pipesim/v1"

// Result is what a simulation measured. Times are in the chain's unit (seconds for
// profiles chainplan takes; time points in unit time), bytes are bytes. Mini-batches are
// numbered from 1, as in the papers; versions count updates (version v: the weights after
// v mini-batches' updates, 0 the initial weights).
type Result struct {
	Format       string           `json:"format"`
	Schedule     Schedule         `json:"schedule"`
	Microbatches int              `json:"microbatches"`
	Minibatches  int              `json:"minibatches"`
	UnitTime     bool             `json:"unit_time"`
	Links        bool             `json:"links"`
	Flush        bool             `json:"flush,omitempty"`
	MaxInflight  int              `json:"max_inflight,omitempty"`
	Stages       []pipeplan.Stage `json:"stages"`
	Checkpointed []int            `json:"checkpointed"`
	// Makespan is the end of the last task of the K mini-batches.
	Makespan float64 `json:"makespan"`
	// Period is the steady-state time per mini-batch, measured over the second half of
	// the run (period.go): when the starts of the mini-batches at the first stage repeat
	// a pattern every Cycle mini-batches there (Steady), their mean spacing over whole
	// repetitions, which does not depend on K; otherwise the larger of the mean spacings
	// of their starts and of their ends, (x_K − x_h)/(K − h) with h = ⌈K/2⌉, which does
	// (the larger discards the drain, where ends come faster once nothing enters, and a
	// pile-up in front of a slower stage, where starts come faster than anything leaves:
	// TiMePReSt without a cap), and a warning says why. With one mini-batch, the makespan.
	Period float64 `json:"period"`
	// PeriodFrom and PeriodTo are the mini-batches (1-based) Period was measured over.
	PeriodFrom int `json:"period_from"`
	PeriodTo   int `json:"period_to"`
	// Steady says that Period is a steady state's, which simulating more mini-batches
	// would not change; Cycle is the mini-batches after which that steady state repeats
	// (1 for most schedules; 0 when not Steady). A schedule with a flush (gpipe,
	// 1f1b-flush, periodic with Flush) is steady from its first mini-batch.
	Steady bool `json:"steady"`
	Cycle  int  `json:"cycle,omitempty"`
	// MicrobatchPeriod is Period/N, the steady-state time per micro-batch.
	MicrobatchPeriod float64 `json:"microbatch_period"`
	// PlanPeriod is the period of a replayed plan, whose MicrobatchPeriod it predicts.
	PlanPeriod float64 `json:"plan_period,omitempty"`
	// MemoryBytes is the memory per device of the problem (a replayed plan's), against
	// which Fits is checked; 0 when none was given.
	MemoryBytes int64         `json:"memory_bytes"`
	PerStage    []StageStats  `json:"per_stage"`
	PerDevice   []DeviceStats `json:"per_device"`
	PerLink     []LinkStats   `json:"per_link"`
	// VersionDifference is v in the steady state (the largest over mini-batches K/2+1..K):
	// mini-batch k's backward uses the update of mini-batch k − v (TiMePReSt's Eq. 2; 1 for
	// the synchronous schedules). MaxStaleness is the largest v − 1 over all mini-batches.
	VersionDifference int `json:"version_difference"`
	MaxStaleness      int `json:"max_staleness"`
	// Chains is the number of independent sequences of updates in the steady state
	// (TiMePReSt's "multiple sequence problem" when above 1): mini-batch k continues the
	// sequence of the mini-batch whose update its backward uses.
	Chains int `json:"chains"`
	// PaperVersionDifference is TiMePReSt's closed form ⌊(W+N−2)/N⌋ (spec §4.4), reported
	// beside the simulated v for TiMePReSt only (0 otherwise); they differ from W = 2N+2 on.
	PaperVersionDifference int              `json:"paper_version_difference,omitempty"`
	PerMinibatch           []MinibatchStats `json:"per_minibatch"`
	Warnings               []string         `json:"warnings"`
	// Timeline holds every task's span when Options.Record is set; Resources names the
	// resources its spans refer to; Memory samples each device's bytes above its static
	// memory whenever they change.
	Timeline  []Span         `json:"-"`
	Resources []string       `json:"-"`
	Memory    []MemorySample `json:"-"`
}

// MemorySample is what device Device holds above its static memory from Time on.
type MemorySample struct {
	Time   float64
	Device int
	Bytes  int64
}

// StageStats is what one stage did.
type StageStats struct {
	Stage        int  `json:"stage"`
	First        int  `json:"first"`
	Last         int  `json:"last"`
	Device       int  `json:"device"`
	Checkpointed bool `json:"checkpointed"`
	// Busy is the time its device spent on its tasks; Bubble the idle share of the
	// makespan, 1 − Busy/Makespan; SteadyBubble the idle share of a steady-state period,
	// 1 − (Busy/K)/Period.
	Busy         float64 `json:"busy"`
	Bubble       float64 `json:"bubble"`
	SteadyBubble float64 `json:"steady_bubble"`
	// PeakInflight is the most micro-batches whose activations it held at once (from the
	// start of a forward to the end of its backward); StoredBytes what one holds (ā of
	// planner/pipeline, or the stage input when checkpointed); PeakActivationBytes the
	// most activation bytes it held, recomputed ones included.
	PeakInflight        int   `json:"peak_inflight"`
	StoredBytes         int64 `json:"stored_bytes"`
	PeakActivationBytes int64 `json:"peak_activation_bytes"`
	// WeightVersions is the most weight versions it held at once: its newest and every one
	// a micro-batch in flight still needs.
	WeightVersions int `json:"weight_versions"`
}

// DeviceStats is what one device did and held.
type DeviceStats struct {
	Device int     `json:"device"`
	Stages []int   `json:"stages"`
	Busy   float64 `json:"busy"`
	Bubble float64 `json:"bubble"`
	// StaticBytes is planner/pipeline's static memory (weight copies and boundary buffers,
	// Problem.DeviceStatic); PeakBytes adds the most it held above it at any instant:
	// activations, the transient bytes of the operation running (Problem.Cost's FwdExtra,
	// BwdExtra) and, except in a replayed plan (whose weight_copies count them), one copy
	// of a stage's weights per version held beyond the first.
	StaticBytes int64 `json:"static_bytes"`
	PeakBytes   int64 `json:"peak_bytes"`
	// Fits is PeakBytes ≤ the memory per device (true when none was given).
	Fits bool `json:"fits"`
}

// LinkStats is what one link carried.
type LinkStats struct {
	Name        string  `json:"name"`
	Busy        float64 `json:"busy"`
	Utilization float64 `json:"utilization"`
}

// MinibatchStats is one mini-batch's times and weight versions.
type MinibatchStats struct {
	Index int `json:"minibatch"`
	// Start is its first forward's start at the first stage, ForwardEnd its last
	// forward's end at the last stage, BackwardStart its first backward's start at the
	// last stage, End its last backward's end at the first stage (its update complete).
	Start         float64 `json:"start"`
	ForwardEnd    float64 `json:"forward_end"`
	BackwardStart float64 `json:"backward_start"`
	End           float64 `json:"end"`
	// ForwardVersions is the version each micro-batch's forward used; BackwardVersion the
	// one its backward used (the oldest stashed one, TiMePReSt's V_b: the newest update
	// complete before its backward starts at the last stage).
	ForwardVersions []int `json:"forward_versions"`
	BackwardVersion int   `json:"backward_version"`
	// VersionDifference is v = k − BackwardVersion; Staleness v − 1, the updates its
	// gradient lags behind a synchronous step; Chain the first mini-batch of its sequence.
	VersionDifference int `json:"version_difference"`
	Staleness         int `json:"staleness"`
	Chain             int `json:"chain"`
}

// Span is one task of the timeline. Minibatch is 0-based; Microbatch is −1 for a task of
// the whole mini-batch (TiMePReSt's backward). Kind is F, B, CF, CB or R (the
// recomputation before a checkpointed stage's backward).
type Span struct {
	Resource   int     `json:"resource"`
	Kind       string  `json:"kind"`
	Stage      int     `json:"stage"`
	Minibatch  int     `json:"minibatch"`
	Microbatch int     `json:"microbatch"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
}

// result summarises the books of a finished simulation.
func (s *sim) result() *Result {
	su := s.su
	r := &Result{Format: Format, Schedule: s.o.Schedule, Microbatches: s.N, Minibatches: s.K,
		UnitTime: s.o.UnitTime, Links: su.links && !s.o.UnitTime, Flush: s.o.Flush, MaxInflight: s.o.MaxInflight,
		Stages: su.Stages(), Checkpointed: []int{}, Makespan: s.now, MemoryBytes: su.pr.Options().MemoryBytes,
		Warnings: []string{}}
	if su.plan != nil {
		r.PlanPeriod = su.plan.Period
	}
	h := (s.K - 1) / 2 // 0-based: mini-batch h+1
	flushes := s.o.Schedule == GPipe || s.o.Schedule == OneFOneBFlush || s.o.Flush
	r.Period, r.PeriodFrom, r.PeriodTo = r.Makespan, 1, s.K
	if s.K > 1 {
		e := measurePeriod(s.mb, flushes, s.o.Schedule == TiMePReSt && s.o.MaxInflight == 0)
		r.Period, r.PeriodFrom, r.PeriodTo, r.Steady, r.Cycle = e.period, e.from, e.to, e.steady, e.cycle
		r.Warnings = append(r.Warnings, periodWarnings(e, s.K, s.timeText)...)
	} else if flushes { // one step from an empty pipeline: the makespan is the step
		r.Steady, r.Cycle = true, 1
	}
	r.MicrobatchPeriod = r.Period / float64(s.N)
	share := func(busy, of float64) float64 {
		if of <= 0 {
			return 0
		}
		return 1 - busy/of
	}
	for st, g := range su.stages {
		x := s.stats[st]
		x.Stage, x.First, x.Last, x.Device, x.Checkpointed = st, g.First, g.Last, g.GPU, su.ckpt[st]
		x.Busy = s.stageBusy[st]
		x.Bubble = share(x.Busy, r.Makespan)
		x.SteadyBubble = share(x.Busy/float64(s.K), r.Period)
		x.StoredBytes = s.stored[st]
		if su.ckpt[st] {
			x.StoredBytes = s.input[st]
			r.Checkpointed = append(r.Checkpointed, st)
		}
		r.PerStage = append(r.PerStage, x)
	}
	static := su.pr.DeviceStatic(su.stages)
	for g := range su.pr.Options().GPUs {
		d := DeviceStats{Device: g, Stages: []int{}, StaticBytes: static[g], PeakBytes: static[g] + s.dynPeak[g]}
		for st, x := range su.stages {
			if x.GPU == g {
				d.Stages = append(d.Stages, st)
				d.Busy += s.stageBusy[st]
			}
		}
		d.Bubble = share(d.Busy, r.Makespan)
		d.Fits = r.MemoryBytes <= 0 || d.PeakBytes <= r.MemoryBytes
		if !d.Fits {
			r.Warnings = append(r.Warnings, fmt.Sprintf("device %d holds %d bytes at its peak, more than the memory %d", g, d.PeakBytes, r.MemoryBytes))
		}
		r.PerDevice = append(r.PerDevice, d)
	}
	for _, res := range s.res[su.pr.Options().GPUs:] {
		r.PerLink = append(r.PerLink, LinkStats{Name: res.name, Busy: res.busyT, Utilization: 1 - share(res.busyT, r.Makespan)})
	}
	if r.PerLink == nil {
		r.PerLink = []LinkStats{}
	}
	s.versions(r, h)
	if s.o.Record {
		r.Timeline, r.Memory = s.timeline, s.memory
		for _, res := range s.res {
			r.Resources = append(r.Resources, res.name)
		}
	}
	if s.K < 2 && !flushes {
		r.Warnings = append(r.Warnings, periodWarnings(periodEstimate{}, s.K, s.timeText)...)
	}
	return r
}

// versions fills the version differences, staleness and chains of the mini-batches, and
// TiMePReSt's comparison with its paper's closed form.
func (s *sim) versions(r *Result, h int) {
	chain := make([]int, s.K+1)
	for k := range s.mb {
		m := &s.mb[k]
		m.VersionDifference = m.Index - m.BackwardVersion
		m.Staleness = m.VersionDifference - 1
		chain[m.Index] = m.Index
		if m.BackwardVersion > 0 {
			chain[m.Index] = chain[m.BackwardVersion]
		}
		m.Chain = chain[m.Index]
		r.MaxStaleness = max(r.MaxStaleness, m.Staleness)
	}
	var roots []int
	for _, m := range s.mb[h:] {
		r.VersionDifference = max(r.VersionDifference, m.VersionDifference)
		if !slices.Contains(roots, m.Chain) {
			roots = append(roots, m.Chain)
		}
	}
	r.Chains = len(roots)
	r.PerMinibatch = s.mb
	if s.o.Schedule != TiMePReSt {
		return
	}
	w, n := s.S, s.N
	r.PaperVersionDifference = PaperVersionDifference(w, n)
	// The paper's analysis (v = 1 for W ≤ N+1, its closed form) is of equal stages in the
	// time-point model; with unequal times a backward can overtake at the last stage and v
	// grows for another reason, which the warnings say.
	why := fmt.Sprintf("W ≤ N+1 (N ≥ %d micro-batches) gives v = 1 on stages of equal times", w-1)
	where := "they first differ at W = 2N+2, spec §4.6"
	if !s.uniform() {
		why = "the stages' times differ, so a mini-batch's backward can start at the last stage before the previous one's update is complete (spec §4.10)"
		where = "the formula assumes stages of equal times"
	}
	if r.VersionDifference > 1 {
		r.Warnings = append(r.Warnings, staleWarning(r.VersionDifference, sequences(s.mb[h:]), why))
	}
	if s.K >= 2*w && r.PaperVersionDifference != r.VersionDifference {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"the paper's closed form v = ⌊(W+N−2)/N⌋ = %d disagrees with the simulated steady-state v = %d (W = %d, N = %d; %s): the simulation is authoritative",
			r.PaperVersionDifference, r.VersionDifference, w, n, where))
	}
}

// staleWarning says what a version difference v > 1 means for training: the backward of
// mini-batch k uses the weights of update k − v, not k − 1; with several independent
// sequences of updates (seqs, as sequences lists them: TiMePReSt's multiple-sequence
// problem, spec §4.3), each set of weights learns from a share of the mini-batches only.
// why says what causes it.
func staleWarning(v int, seqs [][]int, why string) string {
	lag := fmt.Sprintf("in the steady state a mini-batch's backward uses the weights updated by the mini-batch up to "+
		"v = %d before it, not by the one just before", v)
	if len(seqs) > 1 {
		shown := make([]string, 0, 2)
		for _, q := range seqs[:2] {
			shown = append(shown, intsText(q[:min(3, len(q))])+", ...")
		}
		return fmt.Sprintf("multiple-sequence problem: %s, so the updates split into %d independent sequences of "+
			"mini-batches (%s), each of which learns from only about 1/%d of the data; %s",
			lag, len(seqs), strings.Join(shown, " and "), len(seqs), why)
	}
	return fmt.Sprintf("stale weights: %s (staleness up to %d); the updates still form one sequence, but a gradient "+
		"may be computed on weights up to %d updates old; %s", lag, v-1, v-1, why)
}

// sequences groups mini-batches mb by the sequence of updates they continue (Chain), in
// order of first appearance, each as the mini-batches' numbers.
func sequences(mb []MinibatchStats) [][]int {
	var roots []int
	var out [][]int
	for _, m := range mb {
		i := slices.Index(roots, m.Chain)
		if i < 0 {
			i = len(roots)
			roots, out = append(roots, m.Chain), append(out, nil)
		}
		out[i] = append(out[i], m.Index)
	}
	return out
}

// intsText writes xs separated by commas.
func intsText(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

// uniform reports whether every stage's forward and backward last what the first stage's
// do and no transfer takes time: the equal stages of the paper's time-point model.
func (s *sim) uniform() bool {
	for st := range s.S {
		if s.fDur[st] != s.fDur[0] || s.bDur[st] != s.bDur[0] || s.rDur[st] != s.rDur[0] || s.cfDur[st] != 0 || s.cbDur[st] != 0 {
			return false
		}
	}
	return true
}
