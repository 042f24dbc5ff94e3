package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// Two towers of unit-time stages and a joint loss, as separate files.
const (
	imageTower = `{"format": "chainplan.chain/v1", "input_bytes": 8, "stages": [
 {"name": "conv1", "fwd_time": 2, "bwd_time": 3, "out_bytes": 8, "saved_bytes": 12, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 2},
 {"name": "conv2", "fwd_time": 2, "bwd_time": 3, "out_bytes": 8, "saved_bytes": 12, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 2},
 {"name": "conv3", "fwd_time": 2, "bwd_time": 3, "out_bytes": 4, "saved_bytes": 8, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 2},
 {"name": "pool", "fwd_time": 1, "bwd_time": 1, "out_bytes": 2, "saved_bytes": 2, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]}`
	textTower = `{"format": "chainplan.chain/v1", "input_bytes": 4, "stages": [
 {"name": "block1", "fwd_time": 1, "bwd_time": 2, "out_bytes": 6, "saved_bytes": 10, "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 1},
 {"name": "block2", "fwd_time": 1, "bwd_time": 2, "out_bytes": 2, "saved_bytes": 6, "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 1}]}`
	jointLoss = `{"fwd_time": 1, "bwd_time": 1, "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 4}`
)

// towerFiles writes the two towers and the loss and returns the solve arguments naming
// them.
func towerFiles(t *testing.T) []string {
	return []string{"--chain", writeTemp(t, "image.json", imageTower), "--chain", writeTemp(t, "text.json", textTower),
		"--loss", writeTemp(t, "loss.json", jointLoss)}
}

func TestSolveTowers(t *testing.T) {
	args := towerFiles(t)
	for _, algo := range []string{"multichain", "multichain-linear"} {
		code, out, errs := run(t, append([]string{"solve", "--algo", algo, "--budget", "70"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", algo, code, errs)
		}
		p, err := chainplan.ParsePlan([]byte(out))
		if err != nil {
			t.Fatalf("%s: %v\n%s", algo, err, out)
		}
		if p.Algo != algo || p.Multichain == nil || p.Multichain.Branches != 2 || p.PeakBytes > 70 {
			t.Fatalf("%s: plan %+v", algo, p)
		}
		// The plan replays with simulate on the bundle of the same towers.
		bundle := writeBundle(t)
		plan := writeTemp(t, "plan.json", out)
		if code, out, errs := run(t, "simulate", "--chain", bundle, "--plan", plan); code != 0 || !strings.Contains(out, "valid") {
			t.Fatalf("%s: simulate: exit %d\n%s%s", algo, code, out, errs)
		}
		if code, _, errs := run(t, "simulate", "--chain", bundle, "--plan", plan, "--budget", "20"); code != 2 ||
			!strings.Contains(errs, "does not replay") {
			t.Fatalf("%s: simulate over a smaller budget: exit %d %s", algo, code, errs)
		}
	}
	code, out, errs := run(t, append([]string{"solve", "--algo", "multichain", "--budget", "min", "--format", "text"}, args...)...)
	if code != 0 {
		t.Fatalf("min: exit %d: %s", code, errs)
	}
	for _, want := range []string{"algorithm   multichain", "towers      2 with [4 2] stages", "chosen", "sequence"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// writeBundle writes the two towers and the loss as one chainplan.multichain/v1 bundle.
func writeBundle(t *testing.T) string {
	var a, b chainplan.Chain
	if err := json.Unmarshal([]byte(imageTower), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(textTower), &b); err != nil {
		t.Fatal(err)
	}
	l, err := chainplan.ParseLoss([]byte(jointLoss))
	if err != nil {
		t.Fatal(err)
	}
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: []chainplan.Chain{a, b}, Loss: l}
	data, err := mc.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "bundle.json", string(data))
}

func TestSolveTowersBundle(t *testing.T) {
	bundle := writeBundle(t)
	code, out, errs := run(t, "solve", "--algo", "multichain", "--chain", bundle, "--budget", "70")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, files, _ := run(t, append([]string{"solve", "--algo", "multichain", "--budget", "70"}, towerFiles(t)...)...)
	var a, b chainplan.Plan
	if json.Unmarshal([]byte(out), &a) != nil || json.Unmarshal([]byte(files), &b) != nil || a.Makespan != b.Makespan ||
		chainplan.FormatSequence(a.Sequence) != chainplan.FormatSequence(b.Sequence) {
		t.Fatalf("the bundle and the separate files plan differently:\n%s\n%s", out, files)
	}
}

// TestSolveTowersBadInput: bad bundles and requests exit with status 2 and a message that
// names the problem; a budget below the smallest exits with 3 and gives the smallest.
func TestSolveTowersBadInput(t *testing.T) {
	image, text := writeTemp(t, "image.json", imageTower), writeTemp(t, "text.json", textTower)
	loss := writeTemp(t, "loss.json", jointLoss)
	withLoss := writeTemp(t, "own.json", strings.Replace(textTower, `"stages"`, `"loss": {"fwd_time": 1}, "stages"`, 1))
	noBranches := writeTemp(t, "k0.json", `{"format": "chainplan.multichain/v1", "branches": [], "loss": {}}`)
	ownLossBundle := writeTemp(t, "ownb.json", `{"format": "chainplan.multichain/v1", "branches": [
		{"input_bytes": 1, "stages": [], "loss": {"bwd_time": 2}}]}`)
	bundle := writeBundle(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"own loss", []string{"--algo", "multichain", "--chain", image, "--chain", withLoss, "--budget", "70"}, 2,
			"(branch 2) has a loss of its own"},
		{"own loss in a bundle", []string{"--algo", "multichain", "--chain", ownLossBundle, "--budget", "70"}, 2,
			"branch 1: loss: a branch has no loss of its own"},
		{"K = 0", []string{"--algo", "multichain", "--chain", noBranches, "--budget", "70"}, 2, "K = 0"},
		{"below the minimum", []string{"--algo", "multichain", "--chain", image, "--chain", text, "--loss", loss, "--budget", "20"}, 3,
			"the smallest feasible budget is"},
		{"keep count", []string{"--algo", "multichain", "--chain", image, "--chain", text, "--keep-input-grad", "true",
			"--budget", "70"}, 2, "1 values for 2 towers"},
		{"bad loss", []string{"--algo", "multichain", "--chain", image, "--loss", writeTemp(t, "l.json", `{"fwd_time": -1}`),
			"--budget", "70"}, 2, "negative value"},
		{"bundle and loss", []string{"--algo", "multichain", "--chain", bundle, "--loss", loss, "--budget", "70"}, 2,
			"holds its loss"},
		{"rotor with two chains", []string{"--algo", "rotor", "--chain", image, "--chain", text, "--budget", "70"}, 2, "--chain given 2 times"},
		{"rotor with a bundle", []string{"--algo", "rotor", "--chain", bundle, "--budget", "70"}, 2, "plan it with --algo multichain"},
		{"rotor with a loss", []string{"--algo", "rotor", "--chain", image, "--loss", loss, "--budget", "70"}, 2, "apply to towers"},
		{"segments", []string{"--algo", "multichain", "--chain", bundle, "--segments", "2", "--budget", "70"}, 2,
			"segments apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, append([]string{"solve"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, %q; want exit %d and %q", code, errs, tt.code, tt.want)
			}
		})
	}
}

func TestFrontierTowers(t *testing.T) {
	code, out, errs := run(t, append([]string{"frontier", "--algo", "multichain"}, towerFiles(t)...)...)
	if code != 0 || !strings.Contains(out, "multichain frontier") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	svg := filepath.Join(t.TempDir(), "towers.svg")
	code, _, errs = run(t, append([]string{"plot", "frontier", "-o", svg}, towerFiles(t)...)...)
	if code != 0 {
		t.Fatalf("plot frontier: exit %d: %s", code, errs)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "multichain-linear") {
		t.Fatalf("plot frontier wrote %d bytes, %v", len(data), err)
	}
}

// TestTowersRun: a stored profile of towers is planned with --run, recorded, shown,
// replayed, drawn and exported as a bundle; rotor refuses it.
func TestTowersRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "chainplan.db")
	p := syntheticProfile("triplet", 5, 2, 24)
	p.Meta.Extra = map[string]string{profile.KeyTowers: `{"lengths": [5], "branches": [0, 0, 0], "input_bytes": [32768, 32768, 32768]}`}
	mustIngest(t, db, writeProfile(t, dir, "triplet.arrow", p))
	code, out, errs := runDB(t, db, "solve", "--run", "latest", "--algo", "multichain", "--budget", "min")
	if code != 0 || !strings.Contains(errs, "recorded as plan 1 of run 1") {
		t.Fatalf("solve --run: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runDB(t, db, "show-plan", "1"); code != 0 || !strings.Contains(out, "towers      3 with [5 5 5] stages") {
		t.Fatalf("show-plan: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runDB(t, db, "simulate", "--plan-id", "1"); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("simulate --plan-id: exit %d\n%s%s", code, out, errs)
	}
	for _, sub := range []string{"timeline", "frontier"} {
		svg := filepath.Join(dir, sub+".svg")
		if code, _, errs := runDB(t, db, "plot", sub, "--plan-id", "1", "-o", svg); code != 0 {
			t.Fatalf("plot %s --plan-id: exit %d %s", sub, code, errs)
		}
	}
	bundle := filepath.Join(dir, "bundle.json")
	if code, _, errs := runDB(t, db, "export", "1", "-o", bundle); code != 0 {
		t.Fatalf("export: exit %d %s", code, errs)
	}
	mc, err := chainplan.ReadMultiChain(bundle)
	if err != nil || mc.K() != 3 {
		t.Fatalf("exported bundle: %v, %v", mc, err)
	}
	if code, _, errs := runDB(t, db, "solve", "--run", "1", "--algo", "rotor", "--budget", "1GiB"); code != 2 || !strings.Contains(errs, "--algo multichain") {
		t.Fatalf("rotor on a towers run: exit %d %s", code, errs)
	}
	// Without --algo the run of towers chooses, as chainplan.plan does: multichain,
	// printed and recorded.
	code, out, errs = runDB(t, db, "solve", "--run", "1", "--budget", "min", "--format", "text")
	if code != 0 || !strings.Contains(out, "algorithm   multichain\n") || !strings.Contains(out, "towers      3 with") {
		t.Fatalf("solve --run without --algo: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runDB(t, db, "sql", "--format", "csv", "SELECT algo FROM plans ORDER BY plan_id DESC LIMIT 1"); code != 0 || !strings.Contains(out, "multichain") {
		t.Fatalf("recorded algo: exit %d %s", code, out)
	}
}
