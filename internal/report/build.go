package report

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// Options says what Build draws. The zero value draws the frontier without the offloading
// algorithms and the timelines of the first MaxTimelines plans.
type Options struct {
	// BandwidthBytesPerS, when positive, adds POFO and offload-only to the frontier.
	BandwidthBytesPerS float64
	// MaxTimelines bounds the plans drawn (0: DefaultMaxTimelines); the others are listed.
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
	Stages   []profile.Stage
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

// PlanSection is one stored plan of the run.
type PlanSection struct {
	ID                    int64
	Algo                  string
	BudgetBytes, PeakByte int64
	Makespan              float64
	Timeline              template.HTML
	Note                  string
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
	for i, sp := range plans {
		s := PlanSection{ID: sp.ID, Algo: sp.Plan.Algo, BudgetBytes: sp.Plan.BudgetBytes, PeakByte: sp.Plan.PeakBytes,
			Makespan: sp.Plan.Makespan}
		if i >= limit {
			s.Note = fmt.Sprintf("not drawn: the page draws the first %d plans (chainplan plot timeline --plan-id %d draws it)", limit, sp.ID)
			p.Plans = append(p.Plans, s)
			continue
		}
		d, err := svc.PlanTimeline(ctx, sp.ID)
		switch {
		case errors.Is(err, chainplan.ErrUnsupported), errors.Is(err, chainplan.ErrInvalidPlan):
			s.Note = "no timeline: " + err.Error()
		case err != nil:
			return nil, err
		default:
			if s.Timeline, err = inline(plot.Timeline(d)); err != nil {
				return nil, err
			}
		}
		p.Plans = append(p.Plans, s)
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
