package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
)

// TestInfeasibleOnePerFamily holds every algorithm of the checkpointing and offloading
// families to their one infeasibility error: through the service, a budget too small is a
// *chainplan.InfeasibleError (errors.As) whose smallest budget is the algorithm's
// MinBudget, and through the CLI it exits 3 stating that budget. (The pipeline family's
// one error, *pipeplan.InfeasibleError, is held so by pipeline_test.go and
// internal/service/pipeline_test.go; the multichain algorithms share the checkpointing
// family's, internal/service/multichain_test.go.)
func TestInfeasibleOnePerFamily(t *testing.T) {
	path := writePofoChain(t)
	c, err := chainplan.ParseChain([]byte(pofoExample))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range planner.Entries() {
		if e.Schedule == nil {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			req := planner.Request{Algo: e.Name, BudgetBytes: 1}
			args := []string{"solve", "--algo", e.Name, "--chain", path, "--budget", "1"}
			if e.Reads(planner.FieldBandwidth) {
				req.Bandwidth = 1
				args = append(args, "--bandwidth", "1")
			}
			want, err := planner.MinBudget(c, req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = service.Solve(c, service.Request{Request: req})
			var ie *chainplan.InfeasibleError
			if !errors.As(err, &ie) || ie.MinBudgetBytes != want || ie.Algo != e.Name {
				t.Fatalf("service.Solve at 1 byte: %v, want a %s *chainplan.InfeasibleError naming %d bytes", err, e.Name, want)
			}
			code, _, errs := run(t, args...)
			if code != exitInfeasible || !strings.Contains(errs, "smallest feasible budget") ||
				!strings.Contains(errs, fmt.Sprint(want)) {
				t.Fatalf("%v: exit %d, want %d stating %d bytes: %s", args, code, exitInfeasible, want, errs)
			}
		})
	}
}
