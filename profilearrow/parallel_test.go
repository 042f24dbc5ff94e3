package profilearrow_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// The parallel fields written by the Python writer's schema (testdata/profiles,
// resnet_parallel.arrow) are read, aggregated and give the same chain as the file without
// them; files without them read as before (TestReadPyarrowFiles).
func TestReadParallelFields(t *testing.T) {
	p, err := profilearrow.ReadFile(filepath.Join(testdata, "resnet_parallel.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := chainplan.ReadChain(filepath.Join(testdata, "resnet.chain.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Chain()
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != want.Len() || !reflect.DeepEqual(got.Stages[3], want.Stages[3]) {
		t.Fatalf("chain differs from resnet.chain.json: %+v", got.Stages[3])
	}
	o, ok, err := profile.OptimizerOf(p.Meta.Map())
	if err != nil || !ok || o.Name != "Adam" || o.StepTimeS != 0.004 || o.StateBytes != 2*27_164_832 {
		t.Fatalf("OptimizerOf = %+v, %v, %v", o, ok, err)
	}
	stages := p.Stages()
	conv1 := stages[0].Parallel
	in, out := conv1.Shapes()
	if len(in) != 4 || in[1] != 3 || out[1] != 64 || !conv1.WeightCount.Valid || conv1.BiasCount.Int64 != 128 {
		t.Fatalf("conv1: %+v", conv1)
	}
	mods := stages[2].Parallel.ModuleList()
	if len(mods) != 3 || mods[2].Name != "layer2.0.downsample" || mods[2].Kernel[0] != 1 || mods[1].OutChannels != 128 {
		t.Fatalf("layer2 modules: %+v", mods)
	}
	// Batch times are medians over the repetitions, per batch size.
	ts := stages[1].Parallel.BatchTimeList()
	if len(ts) != 2 || ts[0].Batch != 2 || ts[1].Batch != 16 || !(ts[0].FwdTimeS < stages[1].FwdTimeS) {
		t.Fatalf("layer1 batch times: %+v (batch 8: %v)", ts, stages[1].FwdTimeS)
	}
	if loss := stages[len(stages)-1]; loss.Parallel.Recorded() {
		t.Fatalf("the loss has parallel fields: %+v", loss.Parallel)
	}
	// Go's writer keeps them: a round trip gives the same rows.
	var buf bytes.Buffer
	if err := profilearrow.Write(&buf, p, profilearrow.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := profilearrow.Read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Rows {
		if back.Rows[i] != p.Rows[i] {
			t.Fatalf("row %d: %+v after a round trip, want %+v", i, back.Rows[i], p.Rows[i])
		}
	}
}

// Bad parallel fields are refused naming the column and the row.
func TestBadParallelFields(t *testing.T) {
	base, err := profilearrow.ReadFile(filepath.Join(testdata, "resnet_parallel.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, column string
		edit         func(p *profilearrow.Profile)
	}{
		{"shape not JSON", "in_shape", func(p *profilearrow.Profile) { p.Rows[3].Parallel.InShape = "[8, 3," }},
		{"negative dimension", "out_shape", func(p *profilearrow.Profile) { p.Rows[3].Parallel.OutShape = "[8, -3]" }},
		{"negative count", "bias_count", func(p *profilearrow.Profile) { p.Rows[3].Parallel.BiasCount.Int64 = -1 }},
		{"module without type", "modules_json", func(p *profilearrow.Profile) { p.Rows[3].Parallel.Modules = `[{"name": "x", "out_shape": [1]}]` }},
		{"unknown module field", "modules_json", func(p *profilearrow.Profile) {
			p.Rows[3].Parallel.Modules = `[{"type": "Conv2d", "out_shape": [1], "dilation": 2}]`
		}},
		{"batch times lengths", "batch_times_json", func(p *profilearrow.Profile) {
			p.Rows[3].Parallel.BatchTimes = `{"batch_sizes": [2, 4], "fwd_time_s": [1], "bwd_time_s": [1, 2]}`
		}},
		{"negative batch time", "batch_times_json", func(p *profilearrow.Profile) {
			p.Rows[3].Parallel.BatchTimes = `{"batch_sizes": [2], "fwd_time_s": [-1], "bwd_time_s": [1]}`
		}},
		{"stage rows disagree", "out_shape", func(p *profilearrow.Profile) { p.Rows[4].Parallel.OutShape = "[8, 64, 33, 32]" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &profilearrow.Profile{Meta: base.Meta, Rows: append([]profile.Row(nil), base.Rows...)}
			tt.edit(p)
			var buf bytes.Buffer
			if err := profilearrow.Write(&buf, p, profilearrow.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := profilearrow.Read(buf.Bytes())
			var pe *profilearrow.Error
			if !errors.As(err, &pe) || pe.Column != tt.column || pe.Row < 0 {
				t.Fatalf("Read = %v, want an error on column %q naming a row", err, tt.column)
			}
		})
	}
	// A revision this build does not read, and malformed optimizer keys, name the key.
	for key, value := range map[string]string{"parallel_fields": "2", "optimizer_step_time_s": "fast", "optimizer_state_bytes": "-4"} {
		p := &profilearrow.Profile{Meta: base.Meta, Rows: base.Rows}
		p.Meta.Extra = map[string]string{}
		for k, v := range base.Meta.Extra {
			p.Meta.Extra[k] = v
		}
		p.Meta.Extra[key] = value
		var buf bytes.Buffer
		if err := profilearrow.Write(&buf, p, profilearrow.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := profilearrow.Read(buf.Bytes())
		var pe *profilearrow.Error
		if !errors.As(err, &pe) || pe.Key != key || !strings.Contains(err.Error(), value) && key != "parallel_fields" {
			t.Fatalf("%s=%q: Read = %v, want an error on the key", key, value, err)
		}
	}
}
