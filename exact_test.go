package chainplan_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

const validChainV2 = `{
  "format": "chainplan.chain/v2",
  "input_bytes": 4096,
  "stages": [
    {"name": "conv1", "fwd_time": 1.5, "bwd_time": 3.1, "out_bytes": 2048,
     "saved_bytes": 6144, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 512, "param_bytes": 9408,
     "saves_input": true, "saves_output": false, "recompute_time": 1.25,
     "options": [{"saved_bytes": 4096, "fwd_tmp_bytes": 100, "recompute_time": 0.5, "keep": [3, 7]}]},
    {"name": "fc", "fwd_time": 0.5, "bwd_time": 1, "out_bytes": 40,
     "saved_bytes": 40, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}
  ],
  "loss": {"fwd_time": 0.1, "bwd_time": 0.1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}
}`

func TestParseChainV2(t *testing.T) {
	c, err := chainplan.ParseChain([]byte(validChainV2))
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := &c.Stages[0], &c.Stages[1]
	if !s1.InputSaved() || s1.OutputSaved() || s1.Recompute() != 1.25 {
		t.Fatalf("stage 1: InputSaved=%v OutputSaved=%v Recompute=%v, want true false 1.25",
			s1.InputSaved(), s1.OutputSaved(), s1.Recompute())
	}
	// A stage without the fields is read conservatively.
	if !s2.InputSaved() || !s2.OutputSaved() || s2.Recompute() != s2.FwdTime {
		t.Fatalf("stage 2: InputSaved=%v OutputSaved=%v Recompute=%v, want true true %v",
			s2.InputSaved(), s2.OutputSaved(), s2.Recompute(), s2.FwdTime)
	}
	saved, tmp, rec := c.Option(1, 1)
	if saved != 4096 || tmp != 100 || rec != 0.5 {
		t.Fatalf("Option(1, 1)=%d, %d, %v", saved, tmp, rec)
	}
	if saved, tmp, rec := c.Option(1, 0); saved != 6144 || tmp != 0 || rec != 0 {
		t.Fatalf("Option(1, 0)=%d, %d, %v, want the stage's own", saved, tmp, rec)
	}
	if got, want := c.FormatTag(), chainplan.ChainFormatV2; got != want {
		t.Fatalf("FormatTag()=%q, want %q", got, want)
	}
	// A form option round-trips with its own times.
	c.Stages[1].Options = []chainplan.StageOption{{SavedBytes: 80, FwdTmpBytes: 4, Keep: []int{},
		Form: "unfused_head", FwdTime: chainplan.Float(0.4), BwdTime: chainplan.Float(0.8), BwdTmpBytes: chainplan.Int(40)}}
	b, err := c.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := chainplan.ParseChain(b)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(c2, c) {
		t.Fatalf("round trip changed the chain:\n%s", b)
	}
	// Without the exact model the chain is version 1 again.
	cons := c.Conservative()
	if got, want := cons.FormatTag(), chainplan.ChainFormat; got != want {
		t.Fatalf("Conservative().FormatTag()=%q, want %q", got, want)
	}
	if !cons.Stages[0].OutputSaved() || cons.Stages[0].Recompute() != 1.5 || c.Stages[0].OutputSaved() {
		t.Fatal("Conservative() must drop the exact model of the copy only")
	}
}

func TestParseChainV2Errors(t *testing.T) {
	tests := []struct {
		name    string
		from    string // replaced in validChainV2
		to      string
		wantMsg string
	}{
		{"V2FieldInV1", `chainplan.chain/v2`, `chainplan.chain/v1`, `stage 1 ("conv1"): field "`},
		{"NotABool", `"saves_input": true`, `"saves_input": 1`, `field "saves_input": 1 is not true or false`},
		{"NullBool", `"saves_output": false`, `"saves_output": null`, `field "saves_output": null is not true or false`},
		{"NegativeRecompute", `"recompute_time": 1.25`, `"recompute_time": -1`, `field "recompute_time": negative value`},
		{"OptionMissingKeep", `, "keep": [3, 7]`, ``, `field "options": option 0: keep is missing`},
		{"OptionNegativeBytes", `"saved_bytes": 4096`, `"saved_bytes": -1`, `option 0: saved_bytes: negative value`},
		{"OptionUnknownField", `"keep": [3, 7]`, `"keep": [3, 7], "kept": 1`, `option 0: unknown field "kept"`},
		{"OptionKeepTwice", `"keep": [3, 7]`, `"keep": [3, 3]`, `field "options[0].keep": node position 3 twice`},
		{"OptionKeepNotList", `"keep": [3, 7]`, `"keep": "3"`, `option 0: keep is not a list`},
		{"FormWithoutTimes", `"keep": [3, 7]`, `"keep": [], "form": "unfused_head"`,
			`field "options[0].fwd_time": missing on the form option "unfused_head"`},
		{"TimesWithoutForm", `"keep": [3, 7]`, `"keep": [3, 7], "fwd_time": 1, "bwd_time": 1, "bwd_tmp_bytes": 0`,
			`field "options[0].fwd_time": set on an option without a form`},
		{"FormNegativeTime", `"keep": [3, 7]`, `"keep": [], "form": "f", "fwd_time": 1, "bwd_time": -1, "bwd_tmp_bytes": 0`,
			`field "options[0].bwd_time": negative time -1`},
		{"FormNegativeBytes", `"keep": [3, 7]`, `"keep": [], "form": "f", "fwd_time": 1, "bwd_time": 1, "bwd_tmp_bytes": -2`,
			`field "options[0].bwd_tmp_bytes": negative value -2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(validChainV2, tt.from, tt.to, 1)
			if doc == validChainV2 {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := chainplan.ParseChain([]byte(doc))
			if err == nil {
				t.Fatal("ParseChain accepted the document")
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}
