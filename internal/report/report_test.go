package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
)

// storedRun is a database with the resnet-mini profile as run 1, a rotor and a greedy (offloading) plan
// of it, and one execution of the rotor plan.
func storedRun(t *testing.T) *service.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := service.Open(ctx, filepath.Join(t.TempDir(), "c.db"), service.Options{Create: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if _, _, err := svc.Ingest(ctx, "../../testdata/profiles/resnet_file.arrow"); err != nil {
		t.Fatal(err)
	}
	for _, req := range []planner.Request{{Algo: "rotor"}, {Algo: "greedy", Bandwidth: 1e9}} {
		if _, err := svc.PlanRun(ctx, service.RunID(1), service.Request{Request: req, Min: true, Source: service.SourcePython}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.RecordExecution(ctx, 1, service.Execution{StepTimeS: 0.002, PeakBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestReportStructure builds the page and checks what a reader and a browser rely on:
// every section, one table row per stage, every SVG well-formed with its texts, a
// timeline for each plan (the offloading one with its link lane), and nothing loaded from
// anywhere.
func TestReportStructure(t *testing.T) {
	svc := storedRun(t)
	p, err := Build(context.Background(), svc, 1, Options{Version: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, id := range []string{"provenance", "stages", "frontier", "plans", "history", "plan-1", "plan-2"} {
		if !strings.Contains(html, `id="`+id+`"`) {
			t.Errorf("no element with id %q", id)
		}
	}
	if got, want := strings.Count(html, "<tr><td>"), len(p.Stages); got != want {
		t.Errorf("%d stage rows, want %d", got, want)
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(html, -1)
	// The frontier, the two plans' timelines, the history.
	if len(svgs) != 4 {
		t.Fatalf("%d SVG pictures, want 4", len(svgs))
	}
	for i, s := range svgs {
		dec := xml.NewDecoder(strings.NewReader(s))
		for {
			if _, err := dec.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("SVG %d is not well-formed: %v", i, err)
				}
				break
			}
		}
	}
	for _, want := range []string{">Budget versus time<", ">Plan 1 (run 1): rotor at", ">Plan 2 (run 1): greedy at",
		">link<", ">#1<", "resnet-mini", "chainplan v-test"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Self-contained: no script, stylesheet, image, frame or font loaded, no URL outside
	// the page besides the SVG namespace names (which name, never load).
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", "src="} {
		if strings.Contains(html, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, u := range regexp.MustCompile(`https?://[^\s"'<>]+`).FindAllString(html, -1) {
		if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
			t.Errorf("the page names the URL %s", u)
		}
	}
	for _, h := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(h[1], "#") {
			t.Errorf("link %q leaves the page", h[1])
		}
	}
}

// TestReportWithoutExecutions says why the history is missing.
func TestReportWithoutExecutions(t *testing.T) {
	ctx := context.Background()
	svc, err := service.Open(ctx, filepath.Join(t.TempDir(), "c.db"), service.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, _, err := svc.Ingest(ctx, "../../testdata/profiles/resnet_file.arrow"); err != nil {
		t.Fatal(err)
	}
	p, err := Build(ctx, svc, 1, Options{MaxTimelines: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.History != "" || !strings.Contains(p.HistoryNote, "No plan of this run has a measured execution") || len(p.Plans) != 0 {
		t.Fatalf("history %q, note %q, %d plans", p.History, p.HistoryNote, len(p.Plans))
	}
	if _, err := Build(ctx, svc, 9, Options{}); err == nil {
		t.Fatal("run 9: no error")
	}
}

// TestReportPipelinePlans: a stored pipeline plan is shown as one (its memory per device,
// period and speed-up, its Gantt chart with the device kind the run was profiled on and
// the peaks its ranks measured), a second identical plan is listed with it rather than
// drawn again, and nothing reads it as a checkpointing sequence.
func TestReportPipelinePlans(t *testing.T) {
	svc := storedRun(t)
	ctx := context.Background()
	req := pipeplan.Request{Algo: "contiguous", Options: pipeplan.Options{GPUs: 2, Bandwidth: 1e9},
		MinMemory: true, Source: service.SourcePython}
	first, err := svc.PlanPipelineRun(ctx, service.RunID(1), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Replan = true
	again, err := svc.PlanPipelineRun(ctx, service.RunID(1), req)
	if err != nil {
		t.Fatal(err)
	}
	for rank, peak := range []int64{first.Plan.MemoryPerGPU[0] - 10, first.Plan.MemoryPerGPU[1] - 20} {
		if _, err := svc.RecordExecution(ctx, first.PlanID, service.Execution{StepTimeS: first.Plan.Period, PeakBytes: peak,
			Metadata: map[string]string{"rank": strconv.Itoa(rank), "kind": "pipeline"}}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Build(ctx, svc, 1, Options{Version: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	heading := fmt.Sprintf("Plan %d: contiguous on 2 devices at %s per device (period %.3f ms", first.PlanID,
		chainplan.FormatBytes(first.Plan.MemoryBytes), 1000*first.Plan.Period)
	for _, want := range []string{heading, "Measured 2 times", fmt.Sprintf("as plan %d.", again.PlanID),
		">link 0-1<", ">CPU 0<", ">measured peak<", ">predicted peak<"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, bad := range []string{"invalid sequence", "at 0 B", fmt.Sprintf(`id="plan-%d"`, again.PlanID)} {
		if strings.Contains(html, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
}

// TestReportDrawsExecutedPlansFirst: with more plans than pictures, the page draws the
// plans that ran, then the newest, and lists the others with the command that draws them.
func TestReportDrawsExecutedPlansFirst(t *testing.T) {
	svc := storedRun(t) // plan 1 (rotor) ran, plan 2 (greedy) did not
	ctx := context.Background()
	for _, algo := range []string{"revolve", "rotor-ops"} { // plans 3 and 4
		if _, err := svc.PlanRun(ctx, service.RunID(1), service.Request{Request: planner.Request{Algo: algo}, Min: true,
			Source: service.SourcePython}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.RecordExecution(ctx, 3, service.Execution{StepTimeS: 0.003, PeakBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	p, err := Build(ctx, svc, 1, Options{MaxTimelines: 3})
	if err != nil {
		t.Fatal(err)
	}
	var drawn []int64
	for _, s := range p.Plans {
		if s.Timeline != "" {
			drawn = append(drawn, s.ID)
		} else if !strings.Contains(s.Note, "those that ran first, then the newest") ||
			!strings.Contains(s.Note, fmt.Sprintf("--plan-id %d", s.ID)) {
			t.Errorf("plan %d: note %q", s.ID, s.Note)
		}
	}
	if fmt.Sprint(drawn) != "[1 3 4]" {
		t.Fatalf("drawn plans %v, want [1 3 4]: the two that ran, then the newest", drawn)
	}
}

// TestReportShowsRecomputation: a pipeline plan whose stages recompute says so beside its
// picture, whose legend names the hatched boxes; a plan without recomputation says nothing.
func TestReportShowsRecomputation(t *testing.T) {
	svc := storedRun(t)
	ctx := context.Background()
	req := pipeplan.Request{Algo: "contiguous", Options: pipeplan.Options{GPUs: 2, Bandwidth: 1e9, Checkpoint: true},
		MinMemory: true, Source: service.SourcePython}
	ck, err := svc.PlanPipelineRun(ctx, service.RunID(1), req)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Plan.Stages[0].Recompute == nil {
		t.Fatalf("the smallest memory with --checkpoint: stage 0 does not recompute (%v)", ck.Plan.Stages)
	}
	req.Options.Checkpoint = false
	plain, err := svc.PlanPipelineRun(ctx, service.RunID(1), req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(ctx, svc, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	section := func(id int64) string {
		m := regexp.MustCompile(fmt.Sprintf(`(?s)<article class="plan" id="plan-%d">.*?</article>`, id)).FindString(html)
		if m == "" {
			t.Fatalf("no section for plan %d", id)
		}
		return m
	}
	got := section(ck.PlanID)
	for _, want := range []string{`<p class="recompute">Recomputes: stage`, "layers 1-", "(hatched)", ">recomputes (hatched)<"} {
		if !strings.Contains(got, want) {
			t.Errorf("the recomputing plan's section lacks %q", want)
		}
	}
	if got := section(plain.PlanID); strings.Contains(got, "ecomputes") {
		t.Error("the plan without recomputation is marked as recomputing")
	}
}
