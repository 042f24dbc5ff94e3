package profile

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The parallel fields (docs/formats.md, "Parallel fields"): what a profile records for
// the parallel planners (advise, search3d) beyond the chain. They are optional columns and
// metadata keys of chainplan.profile/v1, so that every older file still loads and older
// readers ignore them; KeyParallelFields says a writer recorded them, and which revision.
const (
	// ParallelRevision is the revision of the parallel fields this build writes and reads.
	ParallelRevision = "1"
	// KeyParallelFields is the metadata key whose value is the revision the file holds;
	// absent from files written without the parallel fields.
	KeyParallelFields = "parallel_fields"
	// KeyOptimizer names the optimizer the profile measured ("Adam", "SGD").
	KeyOptimizer = "optimizer"
	// KeyOptimizerStepTimeS is the median time of one optimizer step over all the
	// model's parameters, seconds (ParaDL's Σ WU_l).
	KeyOptimizerStepTimeS = "optimizer_step_time_s"
	// KeyOptimizerStateBytes is the memory the optimizer's state holds after a step
	// (Adam: two moments per parameter), bytes.
	KeyOptimizerStateBytes = "optimizer_state_bytes"
)

// Module is one module of a stage that the tensor and spatial strategies split: a
// convolution or a linear layer, with the attributes ParaDL's limits and halos need (spec
// §5.1: shapes, parameter and bias counts, channels, kernel, stride, padding).
type Module struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`              // the module's class: Conv2d, Linear, ...
	InShape     []int64 `json:"in_shape"`          // the input's shape, batch first
	OutShape    []int64 `json:"out_shape"`         // the output's shape, batch first
	InChannels  int64   `json:"in_channels"`       // C (a Linear's in_features)
	OutChannels int64   `json:"out_channels"`      // F (a Linear's out_features)
	Kernel      []int64 `json:"kernel,omitempty"`  // per spatial dimension; none for a Linear
	Stride      []int64 `json:"stride,omitempty"`  // per spatial dimension
	Padding     []int64 `json:"padding,omitempty"` // per spatial dimension
	WeightCount int64   `json:"weight_count"`      // elements of the weight
	BiasCount   int64   `json:"bias_count"`        // elements of the bias (0 without)
	Groups      int64   `json:"groups,omitempty"`  // a convolution's groups (0 or 1: dense)
}

// BatchTime is a stage's forward and backward time at one batch size.
type BatchTime struct {
	Batch    int64   `json:"batch"`
	FwdTimeS float64 `json:"fwd_time_s"`
	BwdTimeS float64 `json:"bwd_time_s"`
}

// Parallel holds a stage's parallel fields in their file form, so that rows and stages
// stay comparable values: shapes, modules and batch times are canonical JSON (as the
// Format functions write them; "" when not recorded), read with the accessors below.
type Parallel struct {
	InShape     string    // the stage input's shape, batch first: "[32,3,224,224]"
	OutShape    string    // the stage output's shape, batch first
	WeightCount NullInt64 // parameter elements that are not biases
	BiasCount   NullInt64 // bias elements (ParaDL counts biases once: no gradient stash)
	Modules     string    // the convolutions and linear layers inside the stage ("[]": none)
	BatchTimes  string    // the stage's times at other batch sizes
}

// Recorded reports whether any parallel field is set.
func (p Parallel) Recorded() bool {
	return p.InShape != "" || p.OutShape != "" || p.WeightCount.Valid || p.BiasCount.Valid ||
		p.Modules != "" || p.BatchTimes != ""
}

// SameStructure reports whether p and q record the same shapes, counts and modules (the
// batch times are measurements, aggregated by Summarize).
func (p Parallel) SameStructure(q Parallel) bool {
	p.BatchTimes, q.BatchTimes = "", ""
	return p == q
}

// Canonical checks every field and returns p with each written in its canonical form;
// the error names the field (in_shape, out_shape, modules_json, batch_times_json, ...).
func (p Parallel) Canonical() (Parallel, error) {
	for _, f := range []struct {
		name string
		v    *string
	}{{"in_shape", &p.InShape}, {"out_shape", &p.OutShape}} {
		shape, err := ParseShape(*f.v)
		if err != nil {
			return p, &FieldError{Field: f.name, Msg: err.Error()}
		}
		*f.v = FormatShape(shape)
	}
	if p.WeightCount.Valid && p.WeightCount.Int64 < 0 {
		return p, &FieldError{Field: "weight_count", Msg: fmt.Sprintf("%d is negative", p.WeightCount.Int64)}
	}
	if p.BiasCount.Valid && p.BiasCount.Int64 < 0 {
		return p, &FieldError{Field: "bias_count", Msg: fmt.Sprintf("%d is negative", p.BiasCount.Int64)}
	}
	ms, err := ParseModules(p.Modules)
	if err != nil {
		return p, &FieldError{Field: "modules_json", Msg: err.Error()}
	}
	p.Modules = FormatModules(ms)
	ts, err := ParseBatchTimes(p.BatchTimes)
	if err != nil {
		return p, &FieldError{Field: "batch_times_json", Msg: err.Error()}
	}
	p.BatchTimes = FormatBatchTimes(ts)
	return p, nil
}

// FieldError is a parallel field Canonical refuses, by its column name.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Msg) }

// Shapes returns the input and output shapes (nil when not recorded); p is canonical.
func (p Parallel) Shapes() (in, out []int64) {
	in, _ = ParseShape(p.InShape)
	out, _ = ParseShape(p.OutShape)
	return in, out
}

// ModuleList returns the modules (nil when not recorded); p is canonical.
func (p Parallel) ModuleList() []Module {
	ms, _ := ParseModules(p.Modules)
	return ms
}

// BatchTimeList returns the batch times in batch order (nil when not recorded); p is
// canonical.
func (p Parallel) BatchTimeList() []BatchTime {
	ts, _ := ParseBatchTimes(p.BatchTimes)
	return ts
}

// ParseShape decodes a shape written as a JSON array of whole numbers ≥ 0 ("[32, 3, 224,
// 224]"); the empty string is a shape not recorded (nil).
func ParseShape(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return parseShape(s)
}

// FormatShape writes a shape as ParseShape reads it ("" for nil).
func FormatShape(shape []int64) string {
	if shape == nil {
		return ""
	}
	b, _ := json.Marshal(shape) // a []int64 always marshals
	return string(b)
}

// ParseModules decodes a stage's modules from their JSON array; the empty string is "not
// recorded" (nil). Every module needs a type, shapes and non-negative counts.
func ParseModules(s string) ([]Module, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var ms []Module
	if err := dec.Decode(&ms); err != nil {
		return nil, fmt.Errorf("not a JSON array of modules: %v", err)
	}
	if ms == nil {
		ms = []Module{}
	}
	for i, m := range ms {
		switch {
		case strings.TrimSpace(m.Type) == "":
			return nil, fmt.Errorf("module %d: type is empty", i)
		case m.InChannels < 0 || m.OutChannels < 0 || m.WeightCount < 0 || m.BiasCount < 0 || m.Groups < 0:
			return nil, fmt.Errorf("module %d (%s): a count is negative", i, m.Name)
		case len(m.OutShape) == 0:
			return nil, fmt.Errorf("module %d (%s): out_shape is missing", i, m.Name)
		}
		for _, d := range slices.Concat(m.InShape, m.OutShape, m.Kernel, m.Stride, m.Padding) {
			if d < 0 {
				return nil, fmt.Errorf("module %d (%s): a dimension is negative (%d)", i, m.Name, d)
			}
		}
	}
	return ms, nil
}

// FormatModules writes modules as ParseModules reads them ("" for nil).
func FormatModules(ms []Module) string {
	if ms == nil {
		return ""
	}
	b, err := json.Marshal(ms)
	if err != nil { // a Module holds numbers and strings only
		panic(fmt.Sprintf("profile: marshal modules: %v", err))
	}
	return string(b)
}

// batchTimesDoc is the JSON form of a row's batch times.
type batchTimesDoc struct {
	BatchSizes []int64   `json:"batch_sizes"`
	FwdTimeS   []float64 `json:"fwd_time_s"`
	BwdTimeS   []float64 `json:"bwd_time_s"`
}

// ParseBatchTimes decodes a row's times at other batch sizes, written as
// {"batch_sizes": [8, 16], "fwd_time_s": [..], "bwd_time_s": [..]}; the empty string is
// "not recorded" (nil). Batch sizes are ≥ 1 and distinct, times finite and ≥ 0.
func ParseBatchTimes(s string) ([]BatchTime, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var d batchTimesDoc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf(`not {"batch_sizes": [...], "fwd_time_s": [...], "bwd_time_s": [...]}: %v`, err)
	}
	if len(d.FwdTimeS) != len(d.BatchSizes) || len(d.BwdTimeS) != len(d.BatchSizes) {
		return nil, fmt.Errorf("%d batch sizes but %d forward and %d backward times", len(d.BatchSizes), len(d.FwdTimeS), len(d.BwdTimeS))
	}
	out := make([]BatchTime, len(d.BatchSizes))
	for i, b := range d.BatchSizes {
		f, w := d.FwdTimeS[i], d.BwdTimeS[i]
		switch {
		case b < 1:
			return nil, fmt.Errorf("batch size %d is below 1", b)
		case i > 0 && slices.Contains(d.BatchSizes[:i], b):
			return nil, fmt.Errorf("batch size %d appears twice", b)
		case math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || math.IsNaN(w) || math.IsInf(w, 0) || w < 0:
			return nil, fmt.Errorf("batch size %d: times must be finite and ≥ 0 (got %v, %v)", b, f, w)
		}
		out[i] = BatchTime{Batch: b, FwdTimeS: f, BwdTimeS: w}
	}
	slices.SortFunc(out, func(a, b BatchTime) int { return int(a.Batch - b.Batch) })
	return out, nil
}

// FormatBatchTimes writes batch times as ParseBatchTimes reads them ("" for nil).
func FormatBatchTimes(ts []BatchTime) string {
	if ts == nil {
		return ""
	}
	d := batchTimesDoc{BatchSizes: []int64{}, FwdTimeS: []float64{}, BwdTimeS: []float64{}}
	for _, t := range ts {
		d.BatchSizes = append(d.BatchSizes, t.Batch)
		d.FwdTimeS = append(d.FwdTimeS, t.FwdTimeS)
		d.BwdTimeS = append(d.BwdTimeS, t.BwdTimeS)
	}
	b, err := json.Marshal(d)
	if err != nil { // the times are finite
		panic(fmt.Sprintf("profile: marshal batch times: %v", err))
	}
	return string(b)
}

// Optimizer is what the profile measured of the optimizer (metadata keys KeyOptimizer,
// KeyOptimizerStepTimeS, KeyOptimizerStateBytes).
type Optimizer struct {
	Name       string
	StepTimeS  float64 // one step over every parameter, seconds
	StateBytes int64   // the state after a step, bytes
}

// OptimizerOf reads the optimizer keys of a profile's metadata pairs (Metadata.Extra or
// Map). ok is false when the profile recorded no optimizer; a malformed value is a
// *MetadataError naming the key.
func OptimizerOf(kv map[string]string) (o Optimizer, ok bool, err error) {
	name, hasName := kv[KeyOptimizer]
	step, hasStep := kv[KeyOptimizerStepTimeS]
	state, hasState := kv[KeyOptimizerStateBytes]
	if !hasName && !hasStep && !hasState {
		return Optimizer{}, false, nil
	}
	for _, k := range []struct {
		key string
		has bool
	}{{KeyOptimizer, hasName}, {KeyOptimizerStepTimeS, hasStep}, {KeyOptimizerStateBytes, hasState}} {
		if !k.has {
			return Optimizer{}, false, &MetadataError{Key: k.key, Msg: "missing (the optimizer keys come together)"}
		}
	}
	o.Name = strings.TrimSpace(name)
	if o.StepTimeS, err = strconv.ParseFloat(strings.TrimSpace(step), 64); err != nil ||
		math.IsNaN(o.StepTimeS) || math.IsInf(o.StepTimeS, 0) || o.StepTimeS < 0 {
		return Optimizer{}, false, &MetadataError{Key: KeyOptimizerStepTimeS, Msg: fmt.Sprintf("%q is not a time ≥ 0 in seconds", step)}
	}
	if o.StateBytes, err = strconv.ParseInt(strings.TrimSpace(state), 10, 64); err != nil || o.StateBytes < 0 {
		return Optimizer{}, false, &MetadataError{Key: KeyOptimizerStateBytes, Msg: fmt.Sprintf("%q is not a byte count ≥ 0", state)}
	}
	return o, true, nil
}

// checkParallelKeys checks the parallel-field keys of a profile's metadata pairs.
func checkParallelKeys(kv map[string]string) error {
	if rev, ok := kv[KeyParallelFields]; ok && strings.TrimSpace(rev) != ParallelRevision {
		return &MetadataError{Key: KeyParallelFields,
			Msg: fmt.Sprintf("revision %q, this build reads revision %s of the parallel fields", rev, ParallelRevision)}
	}
	_, _, err := OptimizerOf(kv)
	return err
}

// aggregateParallel returns the parallel fields of a stage from its rows: the first row's
// shapes, counts and modules (a reader checks that every row agrees), and per batch size
// the median of the rows' batch times.
func aggregateParallel(rows []Row, idx []int) Parallel {
	p := rows[idx[0]].Parallel
	byBatch := map[int64][2][]float64{}
	var order []int64
	for _, i := range idx {
		for _, t := range rows[i].Parallel.BatchTimeList() {
			v, seen := byBatch[t.Batch]
			if !seen {
				order = append(order, t.Batch)
			}
			byBatch[t.Batch] = [2][]float64{append(v[0], t.FwdTimeS), append(v[1], t.BwdTimeS)}
		}
	}
	p.BatchTimes = ""
	if len(order) > 0 {
		slices.Sort(order)
		ts := make([]BatchTime, 0, len(order))
		for _, b := range order {
			v := byBatch[b]
			ts = append(ts, BatchTime{Batch: b, FwdTimeS: medianFloat(v[0]), BwdTimeS: medianFloat(v[1])})
		}
		p.BatchTimes = FormatBatchTimes(ts)
	}
	return p
}
