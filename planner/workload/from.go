package workload

import (
	"fmt"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// FromChain returns the model of a chain measured at batch batch: each stage a layer
// with its times, sizes and parameters (all counted as weights), the loss, and FieldMemory.
// dtypeBytes is δ (reported only; 0 means 4). The chain is validated.
func FromChain(c *chainplan.Chain, name string, batch, dtypeBytes int64) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if batch < 1 {
		return nil, fmt.Errorf("%w: the batch size a chain was measured at must be ≥ 1 (got %d)", chainplan.ErrUnsupported, batch)
	}
	if dtypeBytes == 0 {
		dtypeBytes = 4
	}
	m := &Model{Name: name, BatchSize: batch, DTypeBytes: dtypeBytes, InputBytes: c.InputBytes, Loss: c.Loss,
		Known: FieldMemory}
	prev := c.InputBytes
	for _, s := range c.Stages {
		m.Layers = append(m.Layers, Layer{Name: s.Name, FwdTimeS: s.FwdTime, BwdTimeS: s.BwdTime,
			InBytes: prev, OutBytes: s.OutBytes, SavedBytes: s.SavedBytes, FwdTmpBytes: s.FwdTmpBytes,
			BwdTmpBytes: s.BwdTmpBytes, WeightBytes: s.ParamBytes})
		prev = s.OutBytes
	}
	return m, m.Check()
}

// dtypeBytes returns δ for a profile's dtype column: 2 for 16-bit types (autocast included,
// whose activations are 16-bit), 8 for float64, 1 for 8-bit types, else 4.
func dtypeBytes(dtype string) int64 {
	d := strings.TrimPrefix(dtype, "autocast:")
	switch {
	case strings.Contains(d, "16"):
		return 2
	case strings.Contains(d, "64"):
		return 8
	case strings.Contains(d, "8"):
		return 1
	}
	return 4
}

// FromProfile returns the model of a profile's aggregated stages (profile.Summarize, the
// loss last) and provenance: times, sizes and, where recorded, the parallel fields
// (shapes, weight and bias counts, modules, batch times, optimizer). Known says which.
func FromProfile(meta profile.Metadata, stages []profile.StageSummary) (*Model, error) {
	m := &Model{Name: meta.ModelName, BatchSize: meta.BatchSize, DTypeBytes: dtypeBytes(meta.DType),
		Known: FieldMemory | FieldShapes | FieldCounts | FieldModules | FieldBatchTimes}
	if o, ok, err := profile.OptimizerOf(meta.Map()); err != nil {
		return nil, err
	} else if ok {
		m.Optimizer = Optimizer{Name: o.Name, StepTimeS: o.StepTimeS, StateBytes: o.StateBytes}
		m.Known |= FieldOptimizer
	}
	for i := range stages {
		s := &stages[i]
		if s.Kind == profile.KindLoss {
			m.Loss = chainplan.Loss{FwdTime: s.FwdTimeS, BwdTime: s.BwdTimeS, FwdTmpBytes: s.FwdTmpBytes.Int64,
				BwdTmpBytes: s.BwdTmpBytes.Int64}
			continue
		}
		if i == 0 {
			m.InputBytes = s.InBytes
		}
		if !s.SavedBytes.Valid || !s.FwdTmpBytes.Valid || !s.BwdTmpBytes.Valid {
			m.Known &^= FieldMemory
		}
		l := Layer{Name: s.Name, FwdTimeS: s.FwdTimeS, BwdTimeS: s.BwdTimeS, InBytes: s.InBytes, OutBytes: s.OutBytes,
			SavedBytes: s.SavedBytes.Int64, FwdTmpBytes: s.FwdTmpBytes.Int64, BwdTmpBytes: s.BwdTmpBytes.Int64,
			WeightBytes: s.ParamBytes}
		p := s.Parallel
		in, out := p.Shapes()
		if in == nil || out == nil {
			m.Known &^= FieldShapes
		}
		if p.WeightCount.Valid && p.BiasCount.Valid && p.WeightCount.Int64+p.BiasCount.Int64 > 0 {
			// Parameter bytes split in proportion to the counts: one dtype per layer.
			n := p.WeightCount.Int64 + p.BiasCount.Int64
			l.BiasBytes = int64(float64(s.ParamBytes) * float64(p.BiasCount.Int64) / float64(n))
			l.WeightBytes = s.ParamBytes - l.BiasBytes
		} else if !p.WeightCount.Valid || !p.BiasCount.Valid {
			m.Known &^= FieldCounts
		}
		if mods := p.ModuleList(); mods == nil {
			m.Known &^= FieldModules
		} else {
			l.Parts = partsOf(mods, s.OutBytes, out)
		}
		if ts := p.BatchTimeList(); ts == nil {
			m.Known &^= FieldBatchTimes
		} else {
			for _, t := range ts {
				l.BatchTimes = append(l.BatchTimes, BatchTime{Batch: t.Batch, FwdTimeS: t.FwdTimeS, BwdTimeS: t.BwdTimeS})
			}
		}
		l.Spatial = len(in) >= 4 && (len(m.Layers) == 0 || m.Layers[len(m.Layers)-1].Spatial)
		m.Layers = append(m.Layers, l)
	}
	if !m.Known.Has(FieldShapes) {
		for i := range m.Layers {
			m.Layers[i].Spatial = false
		}
	}
	m.splitUpdateTime()
	return m, m.Check()
}

// splitUpdateTime sets every layer's UpdateTimeS, its share of the optimizer step in
// proportion to its parameter bytes (spec §2.2: when only the total is measured).
func (m *Model) splitUpdateTime() {
	total := m.TotalParamBytes()
	if total == 0 || m.Optimizer.StepTimeS == 0 {
		return
	}
	for i := range m.Layers {
		m.Layers[i].UpdateTimeS = m.Optimizer.StepTimeS * float64(m.Layers[i].ParamBytes()) / float64(total)
	}
}

// partsOf turns a layer's modules into parts. The element size of activations is the
// layer output's bytes per element (layerOut its shape); halos follow the authors' script
// (spec §2.5.3 [REPO]): the last spatial dimension is split, and a module with kernel K
// there exchanges ⌊(K−1)/2⌋ columns of its input (C channels) forward and of its output
// gradient (F channels) backward, per direction, times the other spatial dimensions.
func partsOf(mods []profile.Module, layerOutBytes int64, layerOut []int64) []Part {
	elem := 4.0
	if n := numel(layerOut); n > 0 && layerOutBytes > 0 {
		elem = float64(layerOutBytes) / float64(n)
	}
	parts := make([]Part, 0, len(mods))
	for _, md := range mods {
		p := Part{Name: md.Name, InChannels: md.InChannels, OutChannels: md.OutChannels}
		perSample := func(shape []int64) float64 {
			if len(shape) == 0 || shape[0] == 0 {
				return 0
			}
			return float64(numel(shape[1:])) * elem
		}
		p.OutBytesPerSample = perSample(md.OutShape)
		if len(md.InShape) >= 3 && len(md.Kernel) > 0 {
			inSpatial := md.InShape[2:]
			p.Area = numel(inSpatial)
			k := md.Kernel[len(md.Kernel)-1]
			if w := (k - 1) / 2; w > 0 {
				p.Halo = true
				p.HaloXBytes = float64(md.InChannels*w*numel(inSpatial[:len(inSpatial)-1])) * elem
				if len(md.OutShape) >= 3 {
					outSpatial := md.OutShape[2:]
					p.HaloDYBytes = float64(md.OutChannels*w*numel(outSpatial[:len(outSpatial)-1])) * elem
				}
			}
		}
		parts = append(parts, p)
	}
	return parts
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}
