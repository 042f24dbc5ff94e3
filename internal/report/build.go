package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// Options says what Build draws. The zero value draws the frontier without the offloading
// algorithms and the pictures of DefaultMaxTimelines plans: those that ran, then the newest.
type Options struct {
	// BandwidthBytesPerS, when positive, adds POFO and offload-only to the frontier.
	BandwidthBytesPerS float64
	// MaxTimelines bounds the plans drawn (0: DefaultMaxTimelines), the executed ones
	// first, then the newest; the others are listed.
	MaxTimelines int
	// Version is the chainplan version named in the page's footer.
	Version string
}

// DefaultMaxTimelines is the number of plan timelines a page draws when Options does not
// say: each is a picture of the whole sequence, and a run planned a hundred times would
// make a page no one scrolls.
const DefaultMaxTimelines = 12

// Page is what the template writes.
type Page struct {
	Title    string
	Run      *store.Run
	Stages   []profile.StageSummary
	Frontier template.HTML
	// Plans lists every stored plan of the run; those drawn have their Timeline set, the
	// others a Note saying why not.
	Plans   []PlanSection
	History template.HTML // empty when no plan ran: HistoryNote says so
	// HistoryNote explains a missing history.
	HistoryNote string
	Version     string
	Generated   time.Time
}

// PlanSection is one stored plan of the run (and the later plans identical to it).
type PlanSection struct {
	ID                    int64
	Algo                  string
	BudgetBytes, PeakByte int64
	Makespan              float64
	// Heading says what the plan is: its algorithm, its memory and its time, in the
	// units of its family (a pipeline plan's memory per device and period).
	Heading string
	// Recompute, for a pipeline plan whose stages recompute, names them (their backward is
	// hatched in the picture); empty otherwise.
	Recompute string
	// Timeline is its picture: the memory timeline, or a pipeline plan's Gantt chart.
	Timeline template.HTML
	Note     string
	// Executions counts the measured executions of the plan (one row per rank for a
	// pipeline plan); Same lists the later plans with the same document, not drawn again.
	Executions int64
	Same       []int64
}

// Build reads run runID's provenance, stages and plans from svc and draws the pictures.
// Errors: chainplan.ErrNotFound for a missing run, a *chainplan.ChainError for a run
// whose sizes were not measured, and the planners' errors.
func Build(ctx context.Context, svc *service.Service, runID int64, opts Options) (*Page, error) {
	run, err := svc.Run(ctx, service.RunID(runID))
	if err != nil {
		return nil, err
	}
	db := svc.Store()
	stages, err := db.Stages(ctx, runID)
	if err != nil {
		return nil, err
	}
	c, err := svc.RunChain(ctx, runID)
	if err != nil {
		return nil, err
	}
	p := &Page{Title: fmt.Sprintf("chainplan report: run %d, %s", run.ID, run.ModelName), Run: run,
		Stages: stages, Version: opts.Version, Generated: time.Now().UTC()}
	fd, err := plot.FrontierOf(c, plot.FrontierOptions{Title: "Budget versus time",
		BandwidthBytesPerS: opts.BandwidthBytesPerS})
	if err != nil {
		return nil, fmt.Errorf("frontier of run %d: %w", runID, err)
	}
	if p.Frontier, err = inline(plot.Frontier(fd)); err != nil {
		return nil, err
	}
	plans, err := db.Plans(ctx, runID)
	if err != nil {
		return nil, err
	}
	limit := opts.MaxTimelines
	if limit <= 0 {
		limit = DefaultMaxTimelines
	}
	outcomes, err := db.Outcomes(ctx, store.OutcomeFilter{RunID: runID})
	if err != nil {
		return nil, err
	}
	runs := map[int64]int64{}
	for _, o := range outcomes {
		runs[o.PlanID] = o.Executions
	}
	first := map[string]int{}      // a plan's document (solve time aside) → its section
	var stored []*store.StoredPlan // the plan each section shows, drawn below
	for _, sp := range plans {
		doc, err := db.PlanDocument(ctx, sp.ID)
		if err != nil {
			return nil, err
		}
		if k, ok := first[sameKey(doc)]; ok {
			p.Plans[k].Same = append(p.Plans[k].Same, sp.ID)
			p.Plans[k].Executions += runs[sp.ID]
			continue
		}
		first[sameKey(doc)] = len(p.Plans)
		p.Plans = append(p.Plans, PlanSection{ID: sp.ID, Algo: sp.Plan.Algo, BudgetBytes: sp.Plan.BudgetBytes,
			PeakByte: sp.Plan.PeakBytes, Makespan: sp.Plan.Makespan, Executions: runs[sp.ID]})
		stored = append(stored, sp)
	}
	drawn := drawOrder(p.Plans, limit)
	for k := range p.Plans {
		if err := drawPlan(ctx, svc, stored[k], &p.Plans[k], drawn[k], limit); err != nil {
			return nil, err
		}
	}
	hd, err := svc.History(ctx, store.OutcomeFilter{RunID: runID}, fmt.Sprintf("run %d", runID))
	switch {
	case errors.Is(err, service.ErrBadInput):
		p.HistoryNote = "No plan of this run has a measured execution yet: run one (plan.wrap(model) in a " +
			"training loop records it) and rebuild this page."
	case err != nil:
		return nil, err
	default:
		if p.History, err = inline(plot.History(hd)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// drawOrder picks the sections whose pictures the page draws, limit at most: the plans
// that ran first (their pictures carry the measured peaks, and they are what a reader of
// the history looks for), then the newest (the latest stored copy counts); the pictures of
// the others are a command away.
func drawOrder(plans []PlanSection, limit int) []bool {
	order := make([]int, len(plans))
	for k := range order {
		order[k] = k
	}
	newest := func(s PlanSection) int64 { return slices.Max(append([]int64{s.ID}, s.Same...)) }
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := plans[a].Executions > 0, plans[b].Executions > 0
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(newest(plans[b]), newest(plans[a]))
	})
	drawn := make([]bool, len(plans))
	for _, k := range order[:min(limit, len(order))] {
		drawn[k] = true
	}
	return drawn
}

// drawPlan fills a plan's heading and, when draw is set, its picture: a pipeline plan's
// Gantt chart with the peaks its ranks measured, another plan's memory timeline.
func drawPlan(ctx context.Context, svc *service.Service, sp *store.StoredPlan, s *PlanSection, draw bool, limit int) error {
	pp, _, ok, err := svc.StoredPipelinePlan(ctx, sp.ID)
	if err != nil {
		return err
	}
	if ok {
		s.BudgetBytes, s.Makespan = pp.MemoryBytes, pp.Period
		s.Heading = fmt.Sprintf("%s on %d devices at %s per device (period %.3f ms, %.2fx one device)",
			pp.Algo, pp.GPUs, chainplan.FormatBytes(pp.MemoryBytes), 1000*pp.Period, pp.Speedup())
		if pp.Chosen != "" && pp.Chosen != pp.Algo {
			s.Heading += ", the " + pp.Chosen + " plan"
		}
		s.Recompute = recomputeNote(pp)
	} else {
		s.Heading = fmt.Sprintf("%s at %s (predicted peak %s, step %.3f ms)", sp.Plan.Algo,
			chainplan.FormatBytes(sp.Plan.BudgetBytes), chainplan.FormatBytes(sp.Plan.PeakBytes), 1000*sp.Plan.Makespan)
	}
	if !draw {
		what := "timeline"
		if ok {
			what = "pipeline"
		}
		s.Note = fmt.Sprintf("not drawn: the page draws %d plans, those that ran first, then the newest (chainplan plot %s --plan-id %d draws it)", limit, what, sp.ID)
		return nil
	}
	if ok {
		d, err := svc.PipelinePicture(ctx, sp.ID, 0)
		if err != nil {
			return err
		}
		s.Timeline, err = inline(plot.Pipeline(d))
		return err
	}
	d, err := svc.PlanTimeline(ctx, sp.ID)
	switch {
	case errors.Is(err, chainplan.ErrUnsupported), errors.Is(err, chainplan.ErrInvalidPlan):
		s.Note = "no timeline: " + err.Error()
	case err != nil:
		return err
	default:
		s.Timeline, err = inline(plot.Timeline(d))
	}
	return err
}

// recomputeNote says which stages of pipeline plan p recompute their activations, and
// where the picture shows it; "" when none does.
func recomputeNote(p *pipeplan.Plan) string {
	var ks []string
	for k, st := range p.Stages {
		if st.Recompute != nil {
			ks = append(ks, fmt.Sprintf("%d (layers %d-%d, in %s)", k, st.First, st.Last, chainplan.FormatBytes(st.Recompute.BudgetBytes)))
		}
	}
	switch len(ks) {
	case 0:
		return ""
	case 1:
		return "Recomputes: stage " + ks[0] + " keeps only its input and runs its forward again in its backward (hatched)."
	}
	return "Recomputes: stages " + strings.Join(ks, ", ") + " keep only their input and run their forward again in their backward (hatched)."
}

// solveTime matches the solver time in a plan document, the one field two computations of
// the same plan differ in.
var solveTime = regexp.MustCompile(`"solve_ms":\s*[-+0-9.eE]+,?`)

// sameKey is what two stored plans share when they are the same plan.
func sameKey(doc []byte) string { return solveTime.ReplaceAllString(string(doc), "") }

// prolog matches what precedes the <svg> element of a standalone SVG document: the XML
// declaration and the generator's comment, which have no place inside HTML.
var prolog = regexp.MustCompile(`(?s)^.*?(<svg)`)

// inline returns a figure's SVG ready to sit in the page: without its prolog, scaled to
// the width of the page's column (the viewBox keeps the proportions).
func inline(f *plot.Figure, err error) (template.HTML, error) {
	if err != nil {
		return "", err
	}
	b, err := f.SVG()
	if err != nil {
		return "", err
	}
	s := prolog.ReplaceAllString(string(b), "$1")
	s = strings.Replace(s, "<svg ", `<svg role="img" class="figure" `, 1)
	// The document is ours, drawn by internal/plot: its texts are escaped by the SVG writer.
	return template.HTML(s), nil //nolint:gosec
}
