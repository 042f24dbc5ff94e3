package pipeline_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

func TestParseRoundTrip(t *testing.T) {
	_, p := nonContiguous(t)
	p.Contiguous = false
	p.Chosen, p.PredictedPeriod, p.SolveMS, p.Microbatches = "madpipe", 1.5, 3.25, 8
	data, err := p.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	got, err := pipeplan.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, p)
	}
	if !pipeplan.IsPipelinePlan(data) || pipeplan.IsPipelinePlan([]byte(`{"algo":"rotor","sequence":[]}`)) {
		t.Error("IsPipelinePlan tells the families apart wrongly")
	}
	// The contract's example writes bytes in exponent form: whole numbers are accepted.
	doc := strings.Replace(string(data), `"memory_bytes": 16`, `"memory_bytes": 1.6e1`, 1)
	if q, err := pipeplan.Parse([]byte(doc)); err != nil || q.MemoryBytes != 16 {
		t.Errorf("memory_bytes 1.6e1: %v, %v", q, err)
	}
}

// TestParseErrors: each bad document is refused with an error naming the field.
func TestParseErrors(t *testing.T) {
	_, p := nonContiguous(t)
	good, err := p.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("the document has no %q", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	cases := []struct{ doc, want string }{
		{``, "not a JSON object"},
		{`[]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{edit(`"format": "chainplan.pipeline/v1"`, `"format": 1`), `format: want a string`},
		{edit(`"algo": "hand",`, ``), "algo: missing"},
		{edit(`"algo": "hand"`, `"algo": "hand", "extra": 1`), "extra: unknown field"},
		{edit(`"gpus": 2`, `"gpus": 0`), "gpus: want a whole number in [1,"},
		{edit(`"gpus": 2`, `"gpus": 1.5`), "gpus: want a whole number"},
		{edit(`"gpus": 2`, `"gpus": "2"`), "gpus: want a whole number"},
		{edit(`"memory_bytes": 16`, `"memory_bytes": -1`), "memory_bytes: want a whole number in [0,"},
		{edit(`"bandwidth": 1`, `"bandwidth": 0`), "bandwidth: want a positive number"},
		{edit(`"bandwidth": 1`, `"bandwidth": null`), "bandwidth: want a number (got null)"},
		{edit(`"weight_copies": 3`, `"weight_copies": 0`), "weight_copies"},
		{edit(`"activation_model": "saved"`, `"activation_model": "all"`), `activation_model: want "saved" or "input"`},
		{edit(`"period": 2`, `"period": -2`), "period: want a positive number"},
		{edit(`"period": 2`, `"period": 1e999`), "period: want a number"},
		{edit(`"first": 2`, `"first": 0`), "stages[1].first: want a whole number in [1,"},
		{edit(`"gpu": 1`, `"gpu": -1`), "stages[1].gpu"},
		{edit(`"gpu": 1`, `"gpu": 1, "name": "x"`), "stages[1].name: unknown field"},
		{edit(`"stages": [`, `"stages": [null, `), "stages[0]: want an object"},
		{edit(`"op": "F"`, `"op": "X"`), `pattern[0].op: want F, B, CF or CB (got "X")`},
		{edit(`"shift": 3`, `"shift": 0.5`), "pattern[8].shift: want a whole number"},
		{edit(`"duration": 0.5`, `"duration": -0.5`), "pattern[0].duration: want a non-negative number"},
		{edit(`"contiguous": false`, `"contiguous": 0`), "contiguous: want true or false"},
		{edit(`"memory_per_gpu": [`, `"memory_per_gpu": [1.5, `), "memory_per_gpu[0]: want a whole number"},
		{edit(`"contiguous": false`, `"contiguous": false, "microbatches": 0`), "microbatches: want a whole number in [1,"},
	}
	for _, tc := range cases {
		_, err := pipeplan.Parse([]byte(tc.doc))
		var pe *pipeplan.PlanError
		if !errors.As(err, &pe) || !errors.Is(err, chainplan.ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60q: error %v, want a PlanError containing %q", tc.doc, err, tc.want)
		}
	}
}
