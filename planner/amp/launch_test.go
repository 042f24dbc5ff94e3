package amp_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
)

// Every candidate carries what parallelize needs (issue 34): the mesh of its degrees, mbs
// and gas, its stages' layer cuts and rotor budgets, in the JSON under the launcher's
// field names.
func TestSearchLaunchShape(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 34))
	checkpointed := 0
	for trial := range 12 {
		m := randomModel(r)
		c := randomCluster(t, r)
		res, err := amp.Search(m, c, amp.Options{GlobalBatch: 16, TopK: -1, Optimizer: "adam"})
		if err != nil {
			continue // nothing fits: no candidate to check
		}
		for _, cand := range res.Candidates {
			sh := cand.Launch
			if sh == nil {
				t.Fatalf("trial %d: candidate %d has no shape", trial, cand.Rank)
			}
			if err := sh.Check(m.L()); err != nil {
				t.Fatalf("trial %d: candidate %d: %v", trial, cand.Rank, err)
			}
			if sh.Mesh.PP != cand.PP || sh.Mesh.DP != cand.DP || sh.Mesh.TP != cand.TMP || sh.Microbatch != cand.MBS ||
				sh.Microbatches != cand.GAS {
				t.Fatalf("trial %d: shape %+v of candidate %+v", trial, sh, cand)
			}
			for j, st := range cand.Stages {
				if j > 0 && sh.Cuts[j-1] != st.FirstLayer-1 || j+1 < len(cand.Stages) && sh.Cuts[j] != st.LastLayer {
					t.Fatalf("trial %d: cuts %v, stage %d covers layers %d..%d", trial, sh.Cuts, j, st.FirstLayer, st.LastLayer)
				}
				want := int64(0)
				if st.Checkpoint != nil {
					want = st.Checkpoint.BudgetBytes
					checkpointed++
				}
				if sh.Checkpoint[j].BudgetBytes != want {
					t.Fatalf("trial %d: stage %d checkpoint %+v, rotor %+v", trial, j, sh.Checkpoint[j], st.Checkpoint)
				}
			}
		}
		b, err := json.Marshal(res.Candidates[0])
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Launch map[string]any `json:"launch"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"mesh", "microbatch", "microbatches", "cuts", "checkpoint"} {
			if _, ok := doc.Launch[k]; !ok || len(doc.Launch) != 5 {
				t.Fatalf("candidate JSON lacks %q: %s", k, b)
			}
		}
	}
	if checkpointed == 0 {
		t.Errorf("no checkpointed stage in the trials: the budget's case is not covered")
	}
}
