package pipeplan_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// FuzzRequest: the JSON form of a pipeline request (what Python sends) never panics; a
// refused request wraps chainplan.ErrUnsupported; an accepted one has no negative time
// limit or micro-batch count, and written back reads as the same request.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"algo": "contiguous", "gpus": 4, "memory_bytes": "16GiB", "bandwidth": "12GB/s", "time_limit_s": 2.5}`,
		`{"memory_bytes": 1e9, "bandwidth": 1.5e10, "min_memory": true, "microbatches": 8}`,
		`{"memory_bytes": null, "faster_memory": true, "checkpoint": true, "headroom": 0.1}`,
		`{"time_limit_s": 1e10}`, // 317 years: it wrapped to a negative time limit
		`{"memory_bytes": "2XB"}`, `{"bandwidth": -1}`, `{"gpus": "4"}`, `{"source": "cli"}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pipeplan.Request
		if err := json.Unmarshal(data, &r); err != nil {
			var se *json.SyntaxError
			if !errors.Is(err, chainplan.ErrUnsupported) && !errors.As(err, &se) {
				t.Fatalf("error %v wraps neither ErrUnsupported nor a JSON syntax error", err)
			}
			return
		}
		if r.TimeLimit < 0 || r.Microbatches < 0 || r.Source != "" {
			t.Fatalf("accepted %s as %+v", data, r)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("accepted %s, yet cannot write it back: %v", data, err)
		}
		var back pipeplan.Request
		if err := json.Unmarshal(out, &back); err != nil || back != r {
			t.Fatalf("round trip of %s through %s: %+v, %v; want %+v", data, out, back, err, r)
		}
	})
}
