package chainplan_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

const validChain = `{
  "format": "chainplan.chain/v1",
  "input_bytes": 4096,
  "stages": [
    {"name": "conv1", "fwd_time": 1.5, "bwd_time": 3.1, "out_bytes": 2048,
     "saved_bytes": 6144, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 512, "param_bytes": 9408},
    {"name": "fc", "fwd_time": 0.5, "bwd_time": 1, "out_bytes": 40,
     "saved_bytes": 40, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}
  ],
  "loss": {"fwd_time": 0.1, "bwd_time": 0.1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}
}`

func TestParseChainValid(t *testing.T) {
	c, err := chainplan.ParseChain([]byte(validChain))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Len(), 2; got != want {
		t.Fatalf("Len()=%d, want %d", got, want)
	}
	if got, want := c.Stages[0].ParamBytes, int64(9408); got != want {
		t.Fatalf("ParamBytes=%d, want %d", got, want)
	}
	if got, want := c.SumTime(), 1.5+3.1+0.5+1+0.1+0.1; got != want {
		t.Fatalf("SumTime()=%v, want %v", got, want)
	}
	// The loss is optional.
	noLoss := strings.Replace(validChain, `,
  "loss": {"fwd_time": 0.1, "bwd_time": 0.1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}`, "", 1)
	if _, err := chainplan.ParseChain([]byte(noLoss)); err != nil {
		t.Fatalf("chain without loss: %v", err)
	}
	// A round trip through MarshalIndent gives the same chain.
	b, err := c.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := chainplan.ParseChain(b)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if !reflect.DeepEqual(c2.Stages[1], c.Stages[1]) || c2.Loss != c.Loss || c2.InputBytes != c.InputBytes {
		t.Fatalf("round trip changed the chain: %+v vs %+v", c2, c)
	}
}

func TestParseChainErrors(t *testing.T) {
	tests := []struct {
		name    string
		from    string // replaced in validChain
		to      string
		wantMsg string // the error must contain this
	}{
		{"NegativeTime", `"fwd_time": 0.5`, `"fwd_time": -0.5`, `stage 2 ("fc"): field "fwd_time": negative value`},
		{"NegativeBytes", `"out_bytes": 2048`, `"out_bytes": -1`, `stage 1 ("conv1"): field "out_bytes": negative`},
		{"NaN", `"bwd_time": 1,`, `"bwd_time": NaN,`, `malformed JSON`},
		{"NullValue", `"bwd_time": 1,`, `"bwd_time": null,`, `stage 2 ("fc"): field "bwd_time": null is not a number`},
		{"Infinite", `"bwd_time": 1,`, `"bwd_time": 1e999,`, `stage 2 ("fc"): field "bwd_time": not a number`},
		{"SavedBelowOut", `"saved_bytes": 6144`, `"saved_bytes": 100`, `stage 1 ("conv1"): field "saved_bytes": 100 is smaller than out_bytes 2048`},
		{"MissingField", `"fwd_tmp_bytes": 0, "bwd_tmp_bytes": 512, `, `"bwd_tmp_bytes": 512, `, `stage 1 ("conv1"): field "fwd_tmp_bytes": missing`},
		{"UnknownField", `"param_bytes": 9408`, `"param_bytes": 9408, "fwd_tme": 3`, `stage 1 ("conv1"): field "fwd_tme": unknown field`},
		{"FractionalBytes", `"out_bytes": 40,`, `"out_bytes": 40.5,`, `stage 2 ("fc"): field "out_bytes": 40.5 is not a whole number of bytes`},
		{"StringNumber", `"out_bytes": 40,`, `"out_bytes": "40",`, `stage 2 ("fc"): field "out_bytes": not a number`},
		{"UnknownVersion", `chainplan.chain/v1`, `chainplan.chain/v3`, `format chainplan.chain/v3 is not supported (this chainplan reads chainplan.chain/v1 or chainplan.chain/v2)`},
		{"MissingFormat", `"format": "chainplan.chain/v1",`, ``, `field "format": missing`},
		{"MissingInput", `"input_bytes": 4096,`, ``, `field "input_bytes": missing`},
		{"NegativeInput", `"input_bytes": 4096`, `"input_bytes": -4096`, `field "input_bytes": negative`},
		{"LossNegative", `"loss": {"fwd_time": 0.1`, `"loss": {"fwd_time": -0.1`, `loss: field "fwd_time": negative`},
		{"LossUnknownField", `"bwd_time": 0.1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}`, `"bwd_time": 0.1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "out_bytes": 3}`, `loss: field "out_bytes": unknown field`},
		{"Truncated", `"loss"`, `"lo`, `malformed JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(validChain, tt.from, tt.to, 1)
			if doc == validChain {
				t.Fatalf("test case does not change the document")
			}
			_, err := chainplan.ParseChain([]byte(doc))
			if err == nil {
				t.Fatalf("ParseChain accepted the document")
			}
			if !errors.Is(err, chainplan.ErrInvalidChain) {
				t.Fatalf("error %v is not ErrInvalidChain", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestParseChainEmpty(t *testing.T) {
	for _, doc := range []string{``, `{}`, `[]`, `{"format": "chainplan.chain/v1", "input_bytes": 1, "stages": []}`} {
		if _, err := chainplan.ParseChain([]byte(doc)); !errors.Is(err, chainplan.ErrInvalidChain) {
			t.Errorf("ParseChain(%q) = %v, want ErrInvalidChain", doc, err)
		}
	}
	_, err := chainplan.ParseChain([]byte(`{"format": "chainplan.chain/v1", "input_bytes": 1, "stages": []}`))
	if !strings.Contains(err.Error(), "no stages") {
		t.Errorf("empty chain: %v", err)
	}
}

// FuzzParseChain checks that the parser never panics and that whatever it accepts is a
// valid chain that survives a round trip.
func FuzzParseChain(f *testing.F) {
	f.Add([]byte(validChain))
	f.Add([]byte(`{"format": "chainplan.chain/v1", "input_bytes": 0, "stages": [{"fwd_time": 0, "bwd_time": 0, "out_bytes": 0, "saved_bytes": 0, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]}`))
	f.Add([]byte(`{"format": "chainplan.chain/v1", "input_bytes": 1e3, "stages": [{"name": 3}]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := chainplan.ParseChain(data)
		if err != nil {
			if !errors.Is(err, chainplan.ErrInvalidChain) {
				t.Fatalf("error %v is not ErrInvalidChain", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid chain: %v", err)
		}
		b, err := c.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chainplan.ParseChain(b); err != nil {
			t.Fatalf("round trip of an accepted chain fails: %v", err)
		}
	})
}

// The last stage may keep less than its output: the loss consumes a_L (docs/formats.md).
func TestParseChainLastStageKeepsLessThanOutput(t *testing.T) {
	doc := strings.Replace(validChain, `"saved_bytes": 40,`, `"saved_bytes": 0,`, 1)
	c, err := chainplan.ParseChain([]byte(doc))
	if err != nil {
		t.Fatalf("last stage with saved_bytes < out_bytes: %v", err)
	}
	if got := c.Stages[1].SavedBytes; got != 0 {
		t.Fatalf("SavedBytes = %d, want 0", got)
	}
}
