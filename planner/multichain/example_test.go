package multichain_test

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/multichain"
)

// Two towers of unit stages joined by a loss (spec §7.2's L = (2, 3) shape). H0's slot is 1
// byte and its reserve 2 (ā_q + a_{q−1} during a backward), so a budget of 8 bytes gives
// the dynamic program 6 slots, one short of keeping everything (K + ΣL = 7): the plan
// recomputes stages 2.1 and 2.2 once (17 against 16 without recomputation).
func ExampleSolve() {
	tower := func(n int) chainplan.Chain {
		c := chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 1}
		for range n {
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: 1, BwdTime: 1, OutBytes: 1, SavedBytes: 1})
		}
		return c
	}
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat,
		Branches: []chainplan.Chain{tower(2), tower(3)}, Loss: chainplan.Loss{FwdTime: 1}}
	low, _ := multichain.MinBudget(mc, multichain.Options{})
	p, err := multichain.Solve(mc, 8, multichain.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("smallest budget:", low)
	fmt.Printf("%s (%s): makespan %v, peak %d of %d\n", p.Algo, p.Chosen, p.Makespan, p.PeakBytes, p.BudgetBytes)
	fmt.Println(chainplan.FormatSequence(p.Sequence))
	for _, c := range p.Candidates {
		fmt.Printf("candidate %s: feasible %v, makespan %v\n", c.Algo, c.Feasible, c.Makespan)
	}
	// Output:
	// smallest budget: 7
	// multichain (dp): makespan 17, peak 8 of 8
	// F_ck 1.1, F_ck 1.2, F_ck 2.1, F_none 2.2, F_ck 2.3, F_all loss, B loss, F_all 2.3, B 2.3, F_ck 2.1, F_all 2.2, B 2.2, F_all 2.1, B 2.1, free_grad 2, F_all 1.2, B 1.2, F_all 1.1, B 1.1, free_grad 1
	// candidate store-all: feasible false, makespan 0
	// candidate dp: feasible true, makespan 17
	// candidate linear: feasible false, makespan 0
}
