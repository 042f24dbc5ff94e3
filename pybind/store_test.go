package pybind

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreRoundTrip(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chainplan.db")
	profile := filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")
	out, err := Ingest(dbOf(db), profile)
	if err != nil {
		t.Fatal(err)
	}
	var ing struct {
		RunID    int64 `json:"run_id"`
		Existing bool  `json:"existing"`
	}
	if err := json.Unmarshal([]byte(out), &ing); err != nil || ing.RunID != 1 || ing.Existing {
		t.Fatalf("Ingest = %s, %v", out, err)
	}
	if out, _ := Ingest(dbOf(db), profile); !strings.Contains(out, `"existing":true`) {
		t.Fatalf("second ingest = %s, want existing", out)
	}
	res, err := planRun(db, 1, `{"algo": "rotor", "min_budget": true}`)
	if err != nil {
		t.Fatal(err)
	}
	var solved struct {
		PlanID int64 `json:"plan_id"`
		Plan   struct {
			Algo        string `json:"algo"`
			BudgetBytes int64  `json:"budget_bytes"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(res), &solved); err != nil || solved.PlanID != 1 || solved.Plan.Algo != "rotor" {
		t.Fatalf("Plan = %s, %v", res, err)
	}
	if _, err := RecordExecution(dbOf(db), solved.PlanID, `{"step_time_s": 0.5, "peak_bytes": 123, "steps": 3}`); err != nil {
		t.Fatal(err)
	}
	enc, err := Query(dbOf(db), "SELECT plan_id, measured_peak_bytes FROM plan_outcomes", "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := base64.StdEncoding.DecodeString(enc); err != nil || !strings.HasPrefix(string(b), "ARROW1") {
		t.Fatalf("Query did not return an Arrow file: %v", err)
	}
	chain, err := Chain(callOf(runSource(db, 1), `{}`))
	if err != nil || !strings.Contains(chain, `"format": "chainplan.chain/v1"`) {
		t.Fatalf("Chain of run 1 = %.80s, %v", chain, err)
	}
	runs, err := Runs(dbOf(db), `{}`)
	if err != nil || !strings.HasPrefix(runs, `[{"run_id":1,"model_name":"resnet-mini"`) {
		t.Fatalf("Runs = %.80s, %v", runs, err)
	}
	if runs, err := Runs(dbOf(db), `{"model_name": "resnet-mini", "loss_name": "nope"}`); err != nil || runs != "[]" {
		t.Fatalf("Runs of no loss = %s, %v", runs, err)
	}
	run, err := Run(dbOf(db), 1)
	var r runJSON
	if err != nil || json.Unmarshal([]byte(run), &r) != nil || r.Device == "" || len(r.InputShape) == 0 || r.DType == "" {
		t.Fatalf("Run(1) = %s, %v", run, err)
	}
	file, err := json.Marshal(profile)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Plan(callOf(`{"profile_path": `+string(file)+`}`, `{"budget_bytes": 1000000000}`))
	if err != nil || !strings.Contains(plan, `"algo":"rotor"`) {
		t.Fatalf("Plan of the profile file = %.80s, %v", plan, err)
	}
}

func TestStoreErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chainplan.db")
	good := filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")
	if _, err := Ingest(dbOf(db), good); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		call   func() error
		prefix string
	}{
		{"MissingFile", func() error { _, err := Ingest(dbOf(db), "/nonexistent.arrow"); return err }, "chainplan[bad-request]"},
		{"BadProfile", func() error {
			_, err := Ingest(dbOf(db), filepath.Join("..", "testdata", "profiles", "bad_negative.arrow"))
			return err
		}, "chainplan[invalid-profile]"},
		{"Write", func() error { _, err := Query(dbOf(db), "DELETE FROM runs", ""); return err }, "chainplan[bad-query]: query refused: queries are read-only"},
		// One code and one "bad query", not "bad request: chainplan: bad query" as before.
		{"Syntax", func() error { _, err := Query(dbOf(db), "SELEC 1", ""); return err }, `chainplan[bad-query]: bad query: near "SELEC": syntax error`},
		{"UnknownColumn", func() error { _, err := Query(dbOf(db), "SELECT nope FROM runs", ""); return err }, "chainplan[bad-query]: bad query: no such column: nope"},
		{"SeveralStatements", func() error { _, err := Query(dbOf(db), "SELECT 1; SELECT 2", ""); return err }, "chainplan[bad-query]: bad query: the query holds several statements"},
		{"ExtraParam", func() error { _, err := Query(dbOf(db), "SELECT 1", "[3]"); return err }, "chainplan[bad-query]: bad query: the statement has 0 placeholders and 1 argument given"},
		{"MissingParam", func() error { _, err := Query(dbOf(db), "SELECT $1", ""); return err }, "chainplan[bad-query]: bad query: the statement has 1 placeholder and 0 arguments given"},
		{"ParamsNotArray", func() error { _, err := Query(dbOf(db), "SELECT $1", `{"a": 1}`); return err }, "chainplan[bad-request]: query parameters: want a JSON array"},
		{"ParamArray", func() error { _, err := Query(dbOf(db), "SELECT $1", `[[1]]`); return err }, "chainplan[bad-request]: query parameter 1: [1] is no value SQL binds"},
		{"UnknownRun", func() error { _, err := planRun(db, 42, `{"budget_bytes": 100}`); return err }, "chainplan[not-found]"},
		{"TooSmall", func() error { _, err := planRun(db, 1, `{"budget_bytes": 100}`); return err }, "chainplan[infeasible;min_budget_bytes="},
		{"BadExecution", func() error { _, err := RecordExecution(dbOf(db), 1, `{"peak_bytes": "x"}`); return err }, "chainplan[bad-request]"},
		{"NegativePeak", func() error { _, err := RecordExecution(dbOf(db), 1, `{"peak_bytes": -1}`); return err }, "chainplan[bad-request]: execution: peak_bytes"},
		{"UnknownKey", func() error { _, err := planRun(db, 1, `{"budjet": 100}`); return err }, `chainplan[bad-request]: request: json: unknown field "budjet"`},
		{"UnknownSource", func() error { _, err := planRun(db, 1, `{"min_budget": true, "source": "x"}`); return err }, `chainplan[bad-request]: source "x"`},
		{"BadFilter", func() error { _, err := Runs(dbOf(db), `{"modelname": "x"}`); return err }, "chainplan[bad-request]: bad request: run filter: json: unknown field \"modelname\""},
		{"NoRun", func() error { _, err := Run(dbOf(db), 3); return err }, "chainplan[not-found]: no run 3"},
		{"NoDatabase", func() error { _, err := Run(dbOf(db+"-none"), 1); return err }, "chainplan[not-found]: no database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil || !strings.HasPrefix(err.Error(), tt.prefix) {
				t.Fatalf("error %v, want prefix %q", err, tt.prefix)
			}
		})
	}
}

func TestBandwidthEntryPoints(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chainplan.db")
	if _, err := Ingest(dbOf(db), filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")); err != nil {
		t.Fatal(err)
	}
	if got, err := LatestBandwidth(dbOf(db), 1); err != nil || got != 0 {
		t.Fatalf("LatestBandwidth before any = %v, %v", got, err)
	}
	if _, err := RecordBandwidth(dbOf(db), 1, "", 12e9, "cuda:0", "pinned copy"); err != nil {
		t.Fatal(err)
	}
	if got, err := LatestBandwidth(dbOf(db), 1); err != nil || got != 12e9 {
		t.Fatalf("LatestBandwidth = %v, %v", got, err)
	}
	if _, err := RecordBandwidth(dbOf(db), 1, "host", -3, "cpu", "x"); err == nil || !strings.HasPrefix(err.Error(), "chainplan[bad-request]") {
		t.Fatalf("negative bandwidth: %v", err)
	}
	if _, err := RecordBandwidth(dbOf(db), 9, "intra", 1e9, "cpu", "x"); err == nil || !strings.HasPrefix(err.Error(), "chainplan[not-found]") {
		t.Fatalf("missing run: %v", err)
	}
	if _, err := RecordBandwidth(dbOf(db), 1, "nvlink", 1e9, "cpu", "x"); err == nil || !strings.Contains(err.Error(), `link "nvlink"`) {
		t.Fatalf("unknown link: %v", err)
	}
	if _, err := RecordBandwidth(dbOf(db), 1, "intra", 3e9, "cpu", "gloo"); err != nil {
		t.Fatal(err)
	}
	if got, err := LatestBandwidth(dbOf(db), 1); err != nil || got != 12e9 {
		t.Fatalf("LatestBandwidth after an intra-node row = %v, %v; want the host row's", got, err)
	}
}

// TestQueryParams: Query binds each JSON parameter to one placeholder, with its type:
// integers exactly, other numbers as floats, booleans as 1 and 0, strings, null.
func TestQueryParams(t *testing.T) {
	params, err := queryParams(`[9007199254740993, 1.5, true, false, "x", null]`)
	want := []any{int64(9007199254740993), 1.5, int64(1), int64(0), "x", nil}
	if err != nil || fmt.Sprint(params) != fmt.Sprint(want) {
		t.Fatalf("queryParams = %#v, %v; want %#v", params, err, want)
	}
	db := filepath.Join(t.TempDir(), "chainplan.db")
	if _, err := Ingest(dbOf(db), filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")); err != nil {
		t.Fatal(err)
	}
	enc, err := Query(dbOf(db), "SELECT count(*) FROM runs WHERE run_id = $1 AND model_name <> $2", `[1, "nope"]`)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := base64.StdEncoding.DecodeString(enc); err != nil || !strings.HasPrefix(string(b), "ARROW1") {
		t.Fatalf("Query did not return an Arrow file: %v", err)
	}
}
