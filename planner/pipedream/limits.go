package pipedream

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// PipeDream's limits (docs/pipeline.md, "Limits"). The partitioning DP itself is
// O(L²·P) and its table is checked with the pipeline model (pipeline.NewProblem).
// MinMemory also keeps every distinct value of the estimate, up to P·L(L+1)/2 of them
// (thresholdBytes each: the value in the sorted list and in the set that deduplicates
// them), and runs the DP once per interval it walks, which no bound short of all of them
// predicts: it counts the DP's steps, L(L−1)/2·(P−1) per run, against maxSteps.
//
// maxSteps: the shared PipeDream profiles and the examples find their smallest memory in
// at most 1.3 s at P ≤ 16 (densenet121, P = 8); a step costs 5 to 50 ns on the 2-core
// reference machine (the 1f1b estimate is the dearer), so 2·10⁹ steps stop a search after
// a minute or so.
const (
	thresholdBytes = 64
	maxSteps       = 2e9
)

// dpSteps is the work of one run of partition.
func dpSteps(pr *pipeline.Problem) float64 {
	l, p := float64(pr.L()), float64(pr.Options().GPUs)
	return l * (l - 1) / 2 * max(1, p-1)
}

// checkThresholds refuses, before they are listed, thresholds that would pass
// chainplan.TableLimit, and a search whose first runs (the bisection over them) would
// pass maxSteps.
func checkThresholds(pr *pipeline.Problem) error {
	l, p := float64(pr.L()), float64(pr.Options().GPUs)
	n := p * l * (l + 1) / 2
	fix := "give the memory per device (--memory BYTES), or use --algo contiguous, whose smallest memory is a min-max DP"
	if err := chainplan.CheckTables(Algo, pr.L(),
		fmt.Sprintf("the smallest-memory search's list of the estimate's values (up to %.3g)", n), n*thresholdBytes,
		func(int64) string { return fix }); err != nil {
		return err
	}
	return spend(pr, n+dpSteps(pr), fix)
}

// spend refuses work of steps over maxSteps.
func spend(pr *pipeline.Problem, steps float64, fix string) error {
	if steps <= maxSteps {
		return nil
	}
	return &chainplan.SizeError{Algo: Algo, Stages: pr.L(),
		What:      fmt.Sprintf("the smallest-memory search on %d devices", pr.Options().GPUs),
		NeedSteps: steps, AtLeast: true, LimitSteps: maxSteps, Fix: fix}
}
