package service_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/chainplan/chainplan/internal/service"
)

// FuzzRequestJSON: the JSON form of a checkpointing request (what Python sends) never
// panics, and what it refuses wraps ErrBadInput; a budget it reads is "min" or a byte
// count, never both.
func FuzzRequestJSON(f *testing.F) {
	for _, s := range []string{
		`{"algo": "rotor", "budget": "2GiB", "slots": 500}`, `{"budget": "min"}`, `{"budget": " MIN "}`,
		`{"budget": 1e9, "bandwidth": "12GB/s", "algo": "pofo"}`, `{"budget_bytes": 5, "min_budget": true}`,
		`{"budget": "1.5"}`, `{"budget": -3}`, `{"bandwidth": 0}`, `{"source": "python"}`, `{"x": 1}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r service.Request
		if err := json.Unmarshal(data, &r); err != nil {
			var se *json.SyntaxError
			if !errors.Is(err, service.ErrBadInput) && !errors.As(err, &se) {
				t.Fatalf("error %v wraps neither ErrBadInput nor a JSON syntax error", err)
			}
			return
		}
	})
}

// FuzzParseRunRef: a RUN argument is a positive run id or "latest", and reads back as
// itself.
func FuzzParseRunRef(f *testing.F) {
	for _, s := range []string{"1", "latest", "0", "-1", "01", "+3", "9223372036854775807", "9223372036854775808", " 1", "LATEST"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := service.ParseRunRef(s)
		if err != nil {
			if !errors.Is(err, service.ErrBadInput) {
				t.Fatalf("ParseRunRef(%q): %v does not wrap ErrBadInput", s, err)
			}
			return
		}
		back, err := service.ParseRunRef(ref.String())
		if err != nil || back != ref {
			t.Fatalf("ParseRunRef(%q) = %v, which reads back as %v, %v", s, ref, back, err)
		}
	})
}
