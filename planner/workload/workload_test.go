package workload_test

import (
	"errors"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/workload"
	"github.com/chainplan/chainplan/profile"
)

func TestTimesAt(t *testing.T) {
	l := workload.Layer{FwdTimeS: 8, BwdTimeS: 16, BatchTimes: []workload.BatchTime{{Batch: 2, FwdTimeS: 3, BwdTimeS: 5}, {Batch: 32, FwdTimeS: 24, BwdTimeS: 48}}}
	tests := []struct {
		b        float64
		fwd, bwd float64
	}{
		{8, 8, 16},     // the base batch
		{2, 3, 5},      // a profiled batch
		{5, 5.5, 10.5}, // between 2 and 8: linear
		{20, 16, 32},   // between 8 and 32
		{1, 1.5, 2.5},  // below the smallest: proportional to it
		{64, 48, 96},   // above the largest: proportional to it
	}
	for _, tt := range tests {
		f, b := l.TimesAt(8, tt.b)
		if math.Abs(f-tt.fwd) > 1e-12 || math.Abs(b-tt.bwd) > 1e-12 {
			t.Errorf("TimesAt(%v) = %v, %v; want %v, %v", tt.b, f, b, tt.fwd, tt.bwd)
		}
	}
	if f, b := (&workload.Layer{FwdTimeS: 2, BwdTimeS: 4}).TimesAt(4, 6); f != 3 || b != 6 {
		t.Errorf("without batch times: %v, %v; want per-sample constant 3, 6", f, b)
	}
}

func tinyChain() *chainplan.Chain {
	return &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 40, Stages: []chainplan.Stage{
		{Name: "a", FwdTime: 1, BwdTime: 2, OutBytes: 80, SavedBytes: 120, FwdTmpBytes: 4, BwdTmpBytes: 8, ParamBytes: 400},
		{Name: "b", FwdTime: 2, BwdTime: 4, OutBytes: 40, SavedBytes: 40, ParamBytes: 200},
		{Name: "c", FwdTime: 1, BwdTime: 1, OutBytes: 4, SavedBytes: 8, ParamBytes: 100},
	}, Loss: chainplan.Loss{FwdTime: 0.5, BwdTime: 0.5, BwdTmpBytes: 4}}
}

func TestFromChainAndSubChains(t *testing.T) {
	m, err := workload.FromChain(tinyChain(), "tiny", 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.DTypeBytes != 4 || m.Layers[1].InBytes != 80 || m.Known != workload.FieldMemory || m.TotalParamBytes() != 700 {
		t.Fatalf("FromChain = %+v", m)
	}
	// At twice the batch: sizes and times double, weights stay.
	c, err := m.ChainAt(8, "test")
	if err != nil {
		t.Fatal(err)
	}
	if c.InputBytes != 80 || c.Stages[0].SavedBytes != 240 || c.Stages[0].FwdTime != 2 || c.Stages[0].ParamBytes != 400 || c.Loss.BwdTime != 1 {
		t.Fatalf("ChainAt(8) = %+v", c)
	}
	// A middle stage: its input is the previous layer's output, no loss.
	sub, err := m.SubChainAt(1, 2, 4, false, "test")
	if err != nil {
		t.Fatal(err)
	}
	if sub.InputBytes != 80 || sub.Len() != 1 || sub.Loss != (chainplan.Loss{}) {
		t.Fatalf("SubChainAt = %+v", sub)
	}
	if _, err := workload.FromChain(tinyChain(), "tiny", 0, 4); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("batch 0: %v", err)
	}
	// Without measured memory, what needs it says which field is missing.
	m.Known = 0
	_, err = m.ChainAt(4, "the memory filter")
	var me *workload.MissingError
	if !errors.As(err, &me) || me.Field != workload.FieldMemory || !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("ChainAt without memory: %v", err)
	}
	if err := m.Need(workload.FieldModules, "filter parallelism"); err == nil || me.Hint() == "" {
		t.Fatalf("Need: %v", err)
	}
}

// A stage of a profile with the parallel fields: counts split the parameter bytes, a 3×3
// convolution gets its halos (C·⌊(K−1)/2⌋·H elements of its input, F·… of its output
// gradient, per direction and sample), a 1×1 one none, and the stages before the first
// without spatial input are split spatially.
func TestFromProfile(t *testing.T) {
	mods := profile.FormatModules([]profile.Module{
		{Name: "c3", Type: "Conv2d", InShape: []int64{2, 8, 16, 16}, OutShape: []int64{2, 4, 16, 16}, InChannels: 8,
			OutChannels: 4, Kernel: []int64{3, 3}, WeightCount: 288},
		{Name: "c1", Type: "Conv2d", InShape: []int64{2, 4, 16, 16}, OutShape: []int64{2, 4, 16, 16}, InChannels: 4,
			OutChannels: 4, Kernel: []int64{1, 1}, WeightCount: 16, BiasCount: 4},
	})
	valid := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	stages := []profile.StageSummary{
		{Index: 1, Name: "conv", Kind: profile.KindStage, Measures: profile.Measures{FwdTimeS: 1, BwdTimeS: 2,
			InBytes: 2 * 8 * 256 * 4, OutBytes: 2 * 4 * 256 * 4, SavedBytes: valid(2 * 4 * 256 * 4), FwdTmpBytes: valid(0),
			BwdTmpBytes: valid(0), ParamBytes: 308 * 4},
			Parallel: profile.Parallel{InShape: "[2,8,16,16]", OutShape: "[2,4,16,16]", WeightCount: valid(304),
				BiasCount: valid(4), Modules: mods, BatchTimes: profile.FormatBatchTimes([]profile.BatchTime{{Batch: 1, FwdTimeS: 0.6, BwdTimeS: 1.1}})}},
		{Index: 2, Name: "fc", Kind: profile.KindStage, Measures: profile.Measures{FwdTimeS: 1, BwdTimeS: 1,
			InBytes: 2 * 1024 * 4, OutBytes: 2 * 10 * 4, SavedBytes: valid(80), FwdTmpBytes: valid(0), BwdTmpBytes: valid(0),
			ParamBytes: 10250 * 4},
			Parallel: profile.Parallel{InShape: "[2,1024]", OutShape: "[2,10]", WeightCount: valid(10240), BiasCount: valid(10),
				Modules: "[]", BatchTimes: profile.FormatBatchTimes([]profile.BatchTime{{Batch: 1, FwdTimeS: 0.5, BwdTimeS: 0.5}})}},
		{Index: 3, Name: "loss", Kind: profile.KindLoss, Measures: profile.Measures{FwdTimeS: 0.1, BwdTimeS: 0.1,
			InBytes: 80, FwdTmpBytes: valid(0), BwdTmpBytes: valid(80)}},
	}
	meta := profile.Metadata{ModelName: "m", BatchSize: 2, DType: "float32",
		Extra: map[string]string{profile.KeyOptimizer: "SGD", profile.KeyOptimizerStepTimeS: "0.01", profile.KeyOptimizerStateBytes: "0"}}
	m, err := workload.FromProfile(meta, stages)
	if err != nil {
		t.Fatal(err)
	}
	all := workload.FieldMemory | workload.FieldShapes | workload.FieldCounts | workload.FieldModules |
		workload.FieldBatchTimes | workload.FieldOptimizer
	if m.Known != all || m.Loss.BwdTmpBytes != 80 || m.InputBytes != 2*8*256*4 {
		t.Fatalf("Known = %b (want %b), model %+v", m.Known, all, m)
	}
	conv := m.Layers[0]
	if conv.BiasBytes != 16 || conv.WeightBytes != 304*4 || !conv.Spatial || m.Layers[1].Spatial {
		t.Fatalf("conv layer: %+v; fc spatial %v", conv, m.Layers[1].Spatial)
	}
	c3, c1 := conv.Parts[0], conv.Parts[1]
	if !c3.Halo || c3.HaloXBytes != 8*1*16*4 || c3.HaloDYBytes != 4*1*16*4 || c3.Area != 256 || c1.Halo {
		t.Fatalf("parts: %+v %+v", c3, c1)
	}
	if c3.OutBytesPerSample != 4*256*4 {
		t.Fatalf("c3 output per sample %v", c3.OutBytesPerSample)
	}
	// The step time splits by parameter bytes.
	if got, want := m.Layers[1].UpdateTimeS, 0.01*float64(10250)/float64(308+10250); math.Abs(got-want) > 1e-15 {
		t.Fatalf("WU of fc %v, want %v", got, want)
	}
	// Older profiles (no parallel fields) load with fewer known fields.
	for i := range stages {
		stages[i].Parallel = profile.Parallel{}
	}
	old, err := workload.FromProfile(profile.Metadata{ModelName: "old", BatchSize: 2}, stages)
	if err != nil || old.Known != workload.FieldMemory || old.Layers[0].Spatial || old.Layers[0].Parts != nil {
		t.Fatalf("old profile: %+v, %v", old, err)
	}
}
