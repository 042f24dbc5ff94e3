package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// longChain writes the chain of issue 33, examples/resnet50.json's stages repeated to
// 40 000, to a temporary file.
func longChain(t *testing.T) string {
	t.Helper()
	c, err := chainplan.ReadChain(filepath.Join("..", "..", "examples", "resnet50.json"))
	if err != nil {
		t.Fatal(err)
	}
	block := c.Stages
	c.Stages = make([]chainplan.Stage, 40_000)
	for i := range c.Stages {
		c.Stages[i] = block[i%len(block)]
		c.Stages[i].Name = fmt.Sprint("s", i+1)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "long.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLongChainExitsTwo: the 40 000-stage chain of issue 33, on which `chainplan solve
// --budget 3GiB` died with Go's "fatal error: out of memory" (its 12.8 GB feasibility table
// allocated at once), exits with status 2 and a message naming the chain's length, the
// size, the limit and what to run instead; what it suggests works.
func TestLongChainExitsTwo(t *testing.T) {
	long := longChain(t)
	refused := []struct {
		args []string
		want []string
	}{
		{[]string{"solve", "--chain", long, "--budget", "3GiB"},
			[]string{"chainplan: rotor: a chain of 40000 stages is too large", "TiB), over the limit of 2.00 GiB (CHAINPLAN_TABLE_LIMIT)",
				"--algo sequential --segments 200"}},
		{[]string{"solve", "--chain", long, "--budget", "min"}, []string{"rotor: a chain of 40000 stages is too large"}},
		{[]string{"solve", "--chain", long, "--budget", "3GiB", "--algo", "pofo", "--bandwidth", "12GB/s"},
			[]string{"pofo: a chain of 40000 stages is too large"}},
		{[]string{"solve", "--chain", long, "--budget", "3GiB", "--algo", "sequential"},
			[]string{"sequential: a chain of 40000 stages is too large", "--segments 200"}},
		{[]string{"pipeline", "--chain", long, "--gpus", "8", "--memory", "16GB", "--bandwidth", "12GB/s"},
			[]string{"pipeline: a chain of 40000 stages is too large", "merge consecutive layers"}},
	}
	for _, tt := range refused {
		code, _, errs := run(t, tt.args...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d: %s", tt.args[:6], code, exitBadInput, errs)
		}
		for _, w := range tt.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr %q does not say %q", tt.args[:6], errs, w)
			}
		}
	}
	code, out, errs := run(t, "solve", "--chain", long, "--budget", "min", "--algo", "sequential", "--segments", "200")
	if code != exitOK || !strings.Contains(out, `"segments": 200`) {
		t.Fatalf("the suggested plan: exit %d: %s", code, errs)
	}
}

// TestTableLimitVariable: $CHAINPLAN_TABLE_LIMIT moves the limit (a chain that plans under
// the default is refused under 1 KiB, naming it) and a value that is not a size exits 2
// naming the variable.
func TestTableLimitVariable(t *testing.T) {
	chain := writeChain(t)
	t.Setenv(chainplan.TableLimitEnv, "1KiB")
	code, _, errs := run(t, "solve", "--chain", chain, "--budget", "16")
	if code != exitBadInput || !strings.Contains(errs, "over the limit of 1.00 KiB (CHAINPLAN_TABLE_LIMIT)") {
		t.Fatalf("under 1 KiB: exit %d: %s", code, errs)
	}
	t.Setenv(chainplan.TableLimitEnv, "plenty")
	code, _, errs = run(t, "solve", "--chain", chain, "--budget", "16")
	if code != exitBadInput || !strings.Contains(errs, "CHAINPLAN_TABLE_LIMIT") || !strings.Contains(errs, `"plenty"`) {
		t.Fatalf("a limit that is not a size: exit %d: %s", code, errs)
	}
}

// TestShippedChainsFitTheLimits: the chains the project ships (examples/, testdata/'s
// chain and PipeDream profiles) are refused by no planner for size: the checkpointing
// algorithms at their smallest budget (but optimal, whose own older limit on its O(S·L⁶)
// work refuses chains of more than about 43 stages), the offloading ones (but POFO and
// AUTOCAPPER, which take seconds to a minute on these chains: their limits are checked on
// them in planner/offload) at half the no-recomputation peak, the pipeline planners at their smallest memory on 4 devices, with
// and without checkpointing. Each exits 0 or, where nothing fits, 3; never 2.
func TestShippedChainsFitTheLimits(t *testing.T) {
	chains, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	chains = append(chains, filepath.Join("..", "..", "testdata", "profiles", "resnet.chain.json"))
	graphs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "pipedream", "*.graph.txt"))
	if err != nil || len(graphs) == 0 {
		t.Fatalf("no PipeDream profiles: %v", err)
	}
	for _, g := range graphs {
		out := filepath.Join(t.TempDir(), filepath.Base(g)+".json")
		if code, _, errs := run(t, "import", "pipedream", g, "-o", out); code != exitOK {
			t.Fatalf("import %s: %s", g, errs)
		}
		chains = append(chains, out)
	}
	for _, chain := range chains {
		if _, err := chainplan.ReadChain(chain); err != nil {
			continue // examples/ holds other JSON too
		}
		_, out, _ := run(t, "solve", "--chain", chain, "--algo", "store-all", "--budget", "min")
		var peak struct {
			PeakBytes int64 `json:"peak_bytes"`
		}
		if err := json.Unmarshal([]byte(out), &peak); err != nil || peak.PeakBytes <= 0 {
			t.Fatalf("%s: store-all: %v %s", chain, err, out)
		}
		half := fmt.Sprint(max(1, peak.PeakBytes/2))
		requests := [][]string{
			{"solve", "--budget", "min"},
			{"solve", "--budget", "min", "--algo", "revolve"},
			{"solve", "--budget", "min", "--algo", "sequential"},
			{"pipeline", "--memory", "min", "--gpus", "4", "--bandwidth", "12GB/s", "--algo", "contiguous"},
			{"pipeline", "--memory", "min", "--gpus", "4", "--bandwidth", "12GB/s", "--algo", "pipedream"},
			{"pipeline", "--memory", "min", "--gpus", "4", "--bandwidth", "12GB/s", "--algo", "contiguous", "--checkpoint"},
		}
		for _, algo := range []string{"offload", "greedy", "opportunist"} {
			requests = append(requests, []string{"solve", "--budget", half, "--algo", algo, "--bandwidth", "12GB/s"})
		}
		for _, args := range requests {
			args = append(args, "--chain", chain)
			code, _, errs := run(t, args...)
			if code == exitBadInput || code == exitInternal || strings.Contains(errs, "too large") {
				t.Errorf("%s: %v: exit %d: %s", filepath.Base(chain), args[:len(args)-2], code, errs)
			}
		}
	}
}
