package pybind

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// callOf is the call envelope of a family's entry: a source (a JSON object) and a request.
func callOf(source, request string) string {
	return `{"source": ` + source + `, "request": ` + request + `}`
}

// chainSource is the source of a chain document given inline, as its text.
func chainSource(chain string) string { return `{"chain": ` + jsonString(chain) + `}` }

// runSource is the source of stored run runID of the database db, as Python sends it.
func runSource(db string, runID int64) string {
	return `{"run_id": ` + jsonInt(runID) + `, "db_env": ` + jsonString(db) + `}`
}

// pathSource is the source of a file of any kind, told apart by Go.
func pathSource(path string) string { return `{"path": ` + jsonString(path) + `}` }

// dbOf is the database document of the SQLite file or DSN path, as Python sends it.
func dbOf(path string) string { return `{"db_env": ` + jsonString(path) + `}` }

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestEveryFamilyTakesTheEnvelope: each family's entry takes one argument, the call
// envelope, and resolves its source in Go: the same chain reached as a stored run, a
// profile file (by path), its chain inline; a bad source is refused by each with the
// same message.
func TestEveryFamilyTakesTheEnvelope(t *testing.T) {
	profile := filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")
	db := filepath.Join(t.TempDir(), "chainplan.db")
	if _, err := Ingest(dbOf(db), profile); err != nil {
		t.Fatal(err)
	}
	stored, err := Chain(callOf(runSource(db, 1), `{}`))
	if err != nil {
		t.Fatal(err)
	}
	file, err := Chain(callOf(pathSource(profile), `{}`))
	if err != nil || file != stored {
		t.Fatalf("Chain of the profile file = %.200s, %v; of its stored run %.200s", file, err, stored)
	}
	entries := map[string]func(string) (string, error){
		"Plan":         Plan,
		"Frontier":     Frontier,
		"PlotFrontier": PlotFrontier,
		"Chain":        Chain,
		"MinBudget": func(c string) (string, error) {
			b, err := MinBudget(c)
			return jsonInt(b), err
		},
	}
	requests := map[string]string{"Plan": `{"budget": "min"}`}
	for name, entry := range entries {
		req := requests[name]
		if req == "" {
			req = `{}`
		}
		var answers []string
		for _, src := range []string{runSource(db, 1), pathSource(profile), `{"profile_path": ` + jsonString(profile) + `}`,
			chainSource(stored)} {
			out, err := entry(callOf(src, req))
			if err != nil {
				t.Fatalf("%s(%s): %v", name, src, err)
			}
			answers = append(answers, out)
		}
		for i := range answers { // the planner's time differs from call to call
			answers[i] = regexp.MustCompile(`"solve_ms":[0-9.e+-]+`).ReplaceAllString(answers[i], "")
		}
		if name != "Plan" && (answers[0] != answers[1] || answers[1] != answers[3]) {
			t.Errorf("%s: the run, the profile file and its chain give different answers", name)
		}
		for src, want := range map[string]string{
			`{}`:                              "chainplan[bad-request]: source: give exactly one of run_id, profile_path, chain_path, path, chain and towers (got none)",
			`{"run_id": 1, "path": "x.json"}`: "(got run_id, path)",
			runSource(db, 9):                  "chainplan[not-found]:",
			pathSource(filepath.Join(t.TempDir(), "nope")): "chainplan[not-found]: source ",
			`{"run_id": 0}`:   "run_id must be a positive integer (got 0)",
			`{"chain": "{}"}`: "chainplan[invalid-chain]",
		} {
			if _, err := entry(callOf(src, req)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s(%s) = %v, want an error with %q", name, src, err, want)
			}
		}
	}
}

// TestEveryEntryRefusesABadSourceAlike: each of the ten entries that take a source (the
// list in docs/ARCHITECTURE.md, "One source envelope") refuses each bad source with the
// same message, Resolve's, whatever the family (given a request it accepts).
func TestEveryEntryRefusesABadSourceAlike(t *testing.T) {
	plan, err := planChain(tinyChain, `{"algo": "rotor", "budget_bytes": 24, "slots": 24}`)
	if err != nil {
		t.Fatal(err)
	}
	entries := sourceEntries(t, plan)
	missing := filepath.Join(t.TempDir(), "nope")
	for _, src := range []string{`{}`, `{"run_id": 1, "path": "x.json"}`, pathSource(missing), `{"chain": "{}"}`,
		`{"towers": {"chains": []}}`} {
		var first string
		for name, entry := range entries {
			_, err := entry(src)
			switch {
			case err == nil:
				t.Errorf("%s(%s) succeeded", name, src)
			case first == "":
				first = err.Error()
			case err.Error() != first:
				t.Errorf("%s(%s) = %v; another entry said %q", name, src, err, first)
			}
		}
	}
	// The requests are ones each entry accepts: a good source is planned (so the refusals
	// above are the source's).
	for name, entry := range entries {
		if _, err := entry(chainSource(tinyChain)); err != nil {
			t.Errorf("%s on a good source: %v", name, err)
		}
	}
}

// sourceEntries are the entries that take a source, each given a request it accepts (plan
// is a plan of tinyChain, for PlotTimeline and PlanTrace), as functions of the source's JSON form.
func sourceEntries(t *testing.T, plan string) map[string]func(source string) (string, error) {
	cluster, err := os.ReadFile(filepath.Join("..", "examples", "clusters", "cpu-4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withCluster := func(source, request string) string {
		return `{"source": ` + source + `, "request": ` + request + `, "cluster": ` + jsonString(string(cluster)) + `, "batch": 8}`
	}
	onePart := func(entry func(string) (string, error), request string) func(string) (string, error) {
		return func(source string) (string, error) { return entry(callOf(source, request)) }
	}
	return map[string]func(source string) (string, error){
		"Plan":         onePart(Plan, `{"budget": "min"}`),
		"Frontier":     onePart(Frontier, `{}`),
		"MinBudget":    onePart(func(c string) (string, error) { b, err := MinBudget(c); return jsonInt(b), err }, `{}`),
		"PlotFrontier": onePart(PlotFrontier, `{}`),
		"PlotTimeline": onePart(PlotTimeline, `{"plan": `+plan+`}`),
		"PlanTrace":    onePart(PlanTrace, `{"plan": `+plan+`}`),
		"Chain":        onePart(Chain, `{}`),
		"Pipeline":     onePart(Pipeline, `{"algo": "contiguous", "gpus": 1, "memory_bytes": 1000000, "bandwidth": 1e9}`),
		"Pipesim":      onePart(Pipesim, `{"schedule": "gpipe", "stages": "1", "microbatches": 2}`),
		"Advise": func(source string) (string, error) {
			return Advise(withCluster(source, `{"dataset_size": 64, "global_batch": 8}`))
		},
		"Search3D": func(source string) (string, error) { return Search3D(withCluster(source, `{"global_batch": 8}`)) },
	}
}
