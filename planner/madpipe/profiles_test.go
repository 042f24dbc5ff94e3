package madpipe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/profile/pipedream"
)

// profile returns the chain of a shared PipeDream profile (testdata/pipedream).
func profile(tb testing.TB, name string) *chainplan.Chain {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "pipedream", name+".graph.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	g, err := pipedream.Parse(f)
	if err != nil {
		tb.Fatal(err)
	}
	imp, err := pipedream.Linearize(g)
	if err != nil {
		tb.Fatal(err)
	}
	return imp.Chain
}

func profileNames(tb testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "pipedream", "*.graph.txt"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no shared profiles: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".graph.txt"))
	}
	return names
}

// TestProfiles plans the shared PipeDream profiles (testdata/pipedream) at memories from
// below the smallest contiguous one to ample, β = 12 GB/s: every plan validates and is no
// worse than the contiguous one. -short keeps two profiles on four devices.
func TestProfiles(t *testing.T) {
	names, gpus := profileNames(t), []int{2, 4, 8}
	if testing.Short() {
		names, gpus = []string{"resnet50", "inception_v3"}, []int{4}
	}
	for _, name := range names {
		c := profile(t, name)
		for _, p := range gpus {
			pr := mustProblem(t, c, pipeplan.Options{GPUs: p, Bandwidth: 12e9})
			need, err := contiguous.MinMemory(pr)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []float64{0.8, 1, 1.5, 4} {
				pr := pr.WithMemory(int64(f * float64(need)))
				tr := &Trace{}
				plan, err := Solve(pr, Options{TimeLimit: 2 * time.Second, Trace: tr})
				cp, cerr := contiguous.Solve(pr)
				if err != nil {
					if cerr == nil {
						t.Fatalf("%s P=%d M=%d: %v, though contiguous plans", name, p, pr.Options().MemoryBytes, err)
					}
					continue
				}
				if err := pipeline.Check(pr, plan); err != nil {
					t.Fatalf("%s P=%d: %v", name, p, err)
				}
				if cerr == nil && plan.Period > cp.Period*(1+1e-9) {
					t.Fatalf("%s P=%d: period %g above the contiguous %g", name, p, plan.Period, cp.Period)
				}
				t.Logf("%s P=%d M=%.3g GB: %s %.4g (contiguous %v, predicted %.4g) phase 1 %v, phase 2 %v",
					name, p, float64(pr.Options().MemoryBytes)/1e9, plan.Chosen, plan.Period, periodOf(cp), tr.Predicted,
					tr.Phase1.Round(time.Millisecond), tr.Phase2.Round(time.Millisecond))
			}
		}
	}
}

func periodOf(p *pipeplan.Plan) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%.4g", p.Period)
}
