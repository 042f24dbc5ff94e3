package pybind

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A tower of the tests (a chain without a loss) and a joint loss.
const (
	testTower = `{"format": "chainplan.chain/v1", "input_bytes": 8, "stages": [
 {"name": "a", "fwd_time": 2, "bwd_time": 3, "out_bytes": 8, "saved_bytes": 12, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 2},
 {"name": "b", "fwd_time": 1, "bwd_time": 1, "out_bytes": 2, "saved_bytes": 2, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]}`
	testLoss = `{"fwd_time": 1, "bwd_time": 1, "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 4}`
)

// TestTowerFilesAreASource: towers given as files ({"towers": {...}}) are a source every
// family's entry takes, read by service.Resolve: Plan plans them as it plans the same
// towers as a bundle file, the entries that take one chain refuse both with one message,
// and a bad set of files is refused by each entry with the same message.
func TestTowerFilesAreASource(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tower, loss := write("tower.json", testTower), write("loss.json", testLoss)
	bundle := write("bundle.json", `{"format": "chainplan.multichain/v1", "branches": [`+testTower+`, `+testTower+
		`], "loss": `+testLoss+`}`)
	towers := `{"towers": {"chains": [` + jsonString(tower) + `, ` + jsonString(tower) + `], "loss": ` + jsonString(loss) + `}}`
	solveMS := regexp.MustCompile(`"solve_ms":[0-9.e+-]+`)
	var plans []string
	for _, src := range []string{towers, pathSource(bundle)} {
		out, err := Plan(callOf(src, `{"budget": "min"}`))
		if err != nil {
			t.Fatalf("Plan(%s): %v", src, err)
		}
		plans = append(plans, solveMS.ReplaceAllString(out, ""))
	}
	if plans[0] != plans[1] || !strings.Contains(plans[0], `"multichain"`) {
		t.Fatalf("the tower files and their bundle plan differently:\n%s\n%s", plans[0], plans[1])
	}
	oneChain := map[string]struct {
		entry   func(string) (string, error)
		request string
	}{
		"Chain":   {Chain, `{}`},
		"Pipesim": {Pipesim, `{"schedule": "gpipe", "stages": "1", "microbatches": 2}`},
	}
	for name, e := range oneChain {
		_, fromFiles := e.entry(callOf(towers, e.request))
		_, fromBundle := e.entry(callOf(pathSource(bundle), e.request))
		if fromFiles == nil || fromBundle == nil || fromFiles.Error() != fromBundle.Error() ||
			!strings.Contains(fromFiles.Error(), "bundle of 2 towers joined at the loss, not one chain") {
			t.Errorf("%s: tower files %v, their bundle %v", name, fromFiles, fromBundle)
		}
	}
	bad := `{"towers": {"chains": [` + jsonString(tower) + `, ` + jsonString(tower) + `], "keep_input_grad": [true]}}`
	const want = "chainplan[bad-request]: source: towers: keep_input_grad (--keep-input-grad) has 1 values for 2 towers"
	for name, e := range map[string]func(string) (string, error){"Plan": Plan, "Frontier": Frontier, "Chain": Chain, "Pipesim": Pipesim} {
		req := `{}`
		if name == "Pipesim" {
			req = oneChain["Pipesim"].request
		}
		if _, err := e(callOf(bad, req)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
