package pipeplan_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

func TestRequestJSONReadsSizesAsWritten(t *testing.T) {
	var r pipeplan.Request
	in := `{"algo": "contiguous", "gpus": 4, "memory_bytes": "16GiB", "bandwidth": "12GB/s",
		"weight_copies": 3, "activation_model": "input", "headroom": 0.1, "no_temporaries": true,
		"checkpoint": true, "time_limit_s": 2.5, "require_solver": true, "replan": true, "microbatches": 8}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	want := pipeplan.Request{Algo: "contiguous", Options: pipeplan.Options{GPUs: 4, MemoryBytes: 16 << 30,
		Bandwidth: 12e9, WeightCopies: 3, ActivationModel: pipeplan.ActivationsInput, Headroom: 0.1,
		NoTemporaries: true, Checkpoint: true}, TimeLimit: 2500 * time.Millisecond, RequireSolver: true,
		Replan: true, Microbatches: 8}
	if r != want {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
	// The JSON form written back reads as the same request, sizes now numbers.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back pipeplan.Request
	if err := json.Unmarshal(b, &back); err != nil || back != want {
		t.Fatalf("round trip %s: %+v, %v", b, back, err)
	}
	if !strings.Contains(string(b), `"memory_bytes":17179869184`) || !strings.Contains(string(b), `"time_limit_s":2.5`) {
		t.Fatalf("JSON form %s", b)
	}
}

func TestRequestJSONReadsLargeByteCountsExactly(t *testing.T) {
	var r pipeplan.Request
	// 2^53 + 1 is not a float64: a count of bytes is read as an integer.
	if err := json.Unmarshal([]byte(`{"memory_bytes": 9007199254740993}`), &r); err != nil || r.MemoryBytes != 9007199254740993 {
		t.Fatalf("memory %d, %v", r.MemoryBytes, err)
	}
}

func TestRequestJSONLeftOutMeansDefault(t *testing.T) {
	var r pipeplan.Request
	if err := json.Unmarshal([]byte(`{"gpus": 2, "bandwidth": 1e9, "min_memory": true}`), &r); err != nil {
		t.Fatal(err)
	}
	want := pipeplan.Request{Options: pipeplan.Options{GPUs: 2, Bandwidth: 1e9}, MinMemory: true}
	if r != want {
		t.Fatalf("got %+v, want %+v", r, want)
	}
}

func TestRequestJSONErrorsNameTheField(t *testing.T) {
	for in, field := range map[string]string{
		`{"gpus": 2, "memory": 5}`:                  "unknown field \"memory\"",
		`{"gpus": 2, "memory_bytes": "lots"}`:       "memory: must be",
		`{"gpus": 2, "memory_bytes": 1.5}`:          "memory: must be",
		`{"gpus": 2, "memory_bytes": true}`:         "memory: must be",
		`{"gpus": 2, "bandwidth": "fast"}`:          "bandwidth",
		`{"gpus": 2, "memory_bytes": 1e30}`:         "memory: must be a whole number",
		`{"gpus": 2, "microbatches": -1}`:           "microbatches",
		`{"gpus": 2, "time_limit_s": -3}`:           "time_limit_s",
		`{"gpus": 2, "time_limit_s": 1e10}`:         "time_limit_s: must be at most", // wrapped to a negative limit (FuzzRequest)
		`{"gpus": 2, "source": "cli"}`:              "unknown field \"source\"",
		`{"gpus": 2, "activation_model": 3}`:        "activation_model",
		`{"gpus": 2, "bandwidth": 1e9} {"gpus": 3}`: "",
	} {
		var r pipeplan.Request
		err := json.Unmarshal([]byte(in), &r)
		if err == nil {
			t.Errorf("%s: no error", in)
			continue
		}
		if field != "" && (!strings.Contains(err.Error(), field) || !errors.Is(err, chainplan.ErrUnsupported)) {
			t.Errorf("%s: %v (want it to name %s and wrap ErrUnsupported)", in, err, field)
		}
	}
}
