package profiler

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
)

// Format is the value of the "format" schema-metadata key of version 1 profile files.
const Format = "chainplan.profile/v1"

// formatPrefix starts every chainplan profile format tag, whatever its version.
const formatPrefix = "chainplan.profile/"

// Stage kinds: the stage_kind column holds one of these.
const (
	KindStage = "stage" // a stage 1..L of the chain
	KindLoss  = "loss"  // the loss, stage L+1
)

// Column names of version 1. The unit is part of every measurement's name.
const (
	ColStageIndex  = "stage_index"   // 1..L, L+1 for the loss
	ColStageName   = "stage_name"    // the module's name
	ColStageKind   = "stage_kind"    // KindStage or KindLoss
	ColRep         = "rep"           // repetition or training step, ≥ 0, unique per stage
	ColFwdTimeS    = "fwd_time_s"    // u_F, seconds
	ColBwdTimeS    = "bwd_time_s"    // u_B, seconds
	ColInBytes     = "in_bytes"      // size of the stage's input; stage 1's is a_0
	ColOutBytes    = "out_bytes"     // a, size of the output and of its gradient
	ColSavedBytes  = "saved_bytes"   // ā, all a forward with graph keeps for B (nullable)
	ColFwdTmpBytes = "fwd_tmp_bytes" // o_F, temporary peak of the forward (nullable)
	ColBwdTmpBytes = "bwd_tmp_bytes" // o_B, temporary peak of the backward (nullable)
	ColParamBytes  = "param_bytes"   // the stage's weights
)

// colKind is the logical type of a column; each accepts a few physical Arrow types.
type colKind int

const (
	kindInt    colKind = iota // any signed or unsigned integer type
	kindFloat                 // float32 or float64
	kindString                // utf8, large_utf8, string_view, or a dictionary of those
)

func (k colKind) String() string {
	switch k {
	case kindInt:
		return "an integer type (int64 preferred)"
	case kindFloat:
		return "float64 (or float32)"
	default:
		return "utf8 (or large_utf8, string_view, dictionary<utf8>)"
	}
}

// column describes one column of version 1.
type column struct {
	name     string
	kind     colKind
	nullable bool
}

// columns lists the columns of version 1, in the order Write writes them. Every column must
// be present; only the nullable ones may hold nulls. Readers ignore other columns.
var columns = []column{
	{ColStageIndex, kindInt, false},
	{ColStageName, kindString, false},
	{ColStageKind, kindString, false},
	{ColRep, kindInt, false},
	{ColFwdTimeS, kindFloat, false},
	{ColBwdTimeS, kindFloat, false},
	{ColInBytes, kindInt, false},
	{ColOutBytes, kindInt, false},
	{ColSavedBytes, kindInt, true},
	{ColFwdTmpBytes, kindInt, true},
	{ColBwdTmpBytes, kindInt, true},
	{ColParamBytes, kindInt, false},
}

// Schema-metadata keys of version 1. All are required; free-text values may be empty.
const (
	KeyFormat         = "format"          // Format
	KeyModelName      = "model_name"      // the model's name, not empty
	KeyModelSignature = "model_signature" // a digest of the model's structure
	KeyTorchVersion   = "torch_version"   // torch.__version__
	KeyDevice         = "device"          // "cpu", "cuda:0", ...
	KeyDeviceName     = "device_name"     // "NVIDIA H100 80GB HBM3", a CPU model, ...
	KeyDType          = "dtype"           // "float32", "bfloat16", ...
	KeyBatchSize      = "batch_size"      // integer ≥ 1
	KeyInputShape     = "input_shape"     // JSON array of integers ≥ 0
	KeyThreads        = "threads"         // integer ≥ 1, torch.get_num_threads()
	KeyTimingMethod   = "timing_method"   // "cuda_event", "perf_counter", ...
	KeyWarmupReps     = "warmup_reps"     // integer ≥ 0, untimed repetitions first
	KeyReps           = "reps"            // integer ≥ 1, timed repetitions (or steps)
	KeyCreatedAt      = "created_at"      // RFC 3339 time the profile was taken
	KeyHost           = "host"            // host name
)

// Metadata is the provenance of a profile, from its schema metadata.
type Metadata struct {
	Format         string
	ModelName      string
	ModelSignature string
	TorchVersion   string
	Device         string
	DeviceName     string
	DType          string
	BatchSize      int64
	InputShape     []int64
	Threads        int64
	TimingMethod   string
	WarmupReps     int64
	Reps           int64
	CreatedAt      time.Time
	Host           string
	// Extra holds every other key of the schema metadata (pandas writes one, for instance).
	Extra map[string]string
}

// Map returns the metadata as the key-value pairs of the schema metadata.
func (m *Metadata) Map() map[string]string {
	shape := m.InputShape
	if shape == nil {
		shape = []int64{}
	}
	js, _ := json.Marshal(shape) // a []int64 always marshals
	kv := map[string]string{
		KeyFormat:         m.Format,
		KeyModelName:      m.ModelName,
		KeyModelSignature: m.ModelSignature,
		KeyTorchVersion:   m.TorchVersion,
		KeyDevice:         m.Device,
		KeyDeviceName:     m.DeviceName,
		KeyDType:          m.DType,
		KeyBatchSize:      strconv.FormatInt(m.BatchSize, 10),
		KeyInputShape:     string(js),
		KeyThreads:        strconv.FormatInt(m.Threads, 10),
		KeyTimingMethod:   m.TimingMethod,
		KeyWarmupReps:     strconv.FormatInt(m.WarmupReps, 10),
		KeyReps:           strconv.FormatInt(m.Reps, 10),
		KeyCreatedAt:      m.CreatedAt.UTC().Format(time.RFC3339Nano),
		KeyHost:           m.Host,
	}
	if m.Format == "" {
		kv[KeyFormat] = Format
	}
	for k, v := range m.Extra {
		if _, known := kv[k]; !known {
			kv[k] = v
		}
	}
	return kv
}

// parseMetadata checks and decodes the schema metadata. The format key is checked first,
// so that a file of another version is reported as such rather than as missing keys.
func parseMetadata(kv map[string]string) (Metadata, error) {
	format, ok := kv[KeyFormat]
	switch {
	case !ok:
		return Metadata{}, &Error{Key: KeyFormat, Row: -1,
			Msg: fmt.Sprintf("missing; this is not a chainplan profile (want %q in the schema metadata)", Format)}
	case format != Format && strings.HasPrefix(format, formatPrefix):
		return Metadata{}, fmt.Errorf("%w: profile format %q, this build reads %q", chainplan.ErrSchemaVersion, format, Format)
	case format != Format:
		return Metadata{}, &Error{Key: KeyFormat, Row: -1, Msg: fmt.Sprintf("unknown format %q, want %q", format, Format)}
	}
	keys := []string{KeyModelName, KeyModelSignature, KeyTorchVersion, KeyDevice, KeyDeviceName, KeyDType,
		KeyBatchSize, KeyInputShape, KeyThreads, KeyTimingMethod, KeyWarmupReps, KeyReps, KeyCreatedAt, KeyHost}
	var missing []string
	for _, k := range keys {
		if _, ok := kv[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Metadata{}, &Error{Key: missing[0], Row: -1,
			Msg: fmt.Sprintf("missing from the schema metadata (missing keys: %s)", strings.Join(missing, ", "))}
	}
	m := Metadata{
		Format:         format,
		ModelName:      kv[KeyModelName],
		ModelSignature: kv[KeyModelSignature],
		TorchVersion:   kv[KeyTorchVersion],
		Device:         kv[KeyDevice],
		DeviceName:     kv[KeyDeviceName],
		DType:          kv[KeyDType],
		TimingMethod:   kv[KeyTimingMethod],
		Host:           kv[KeyHost],
	}
	if strings.TrimSpace(m.ModelName) == "" {
		return Metadata{}, &Error{Key: KeyModelName, Row: -1, Msg: "empty"}
	}
	ints := []struct {
		key string
		dst *int64
		min int64
	}{{KeyBatchSize, &m.BatchSize, 1}, {KeyThreads, &m.Threads, 1}, {KeyWarmupReps, &m.WarmupReps, 0}, {KeyReps, &m.Reps, 1}}
	for _, f := range ints {
		v, err := strconv.ParseInt(strings.TrimSpace(kv[f.key]), 10, 64)
		if err != nil {
			return Metadata{}, &Error{Key: f.key, Row: -1, Msg: fmt.Sprintf("%q is not an integer", kv[f.key])}
		}
		if v < f.min {
			return Metadata{}, &Error{Key: f.key, Row: -1, Msg: fmt.Sprintf("%d is below the minimum %d", v, f.min)}
		}
		*f.dst = v
	}
	shape, err := parseShape(kv[KeyInputShape])
	if err != nil {
		return Metadata{}, &Error{Key: KeyInputShape, Row: -1, Msg: err.Error()}
	}
	m.InputShape = shape
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(kv[KeyCreatedAt]))
	if err != nil {
		return Metadata{}, &Error{Key: KeyCreatedAt, Row: -1,
			Msg: fmt.Sprintf("%q is not an RFC 3339 time such as 2025-01-31T12:00:00Z", kv[KeyCreatedAt])}
	}
	m.CreatedAt = t.UTC()
	known := map[string]bool{KeyFormat: true}
	for _, k := range keys {
		known[k] = true
	}
	for k, v := range kv {
		if !known[k] {
			if m.Extra == nil {
				m.Extra = map[string]string{}
			}
			m.Extra[k] = v
		}
	}
	return m, nil
}

// parseShape decodes a JSON array of non-negative integers.
func parseShape(s string) ([]int64, error) {
	var raw []float64
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("%q is not a JSON array of integers such as [32, 3, 224, 224]", s)
	}
	shape := make([]int64, len(raw))
	for i, v := range raw {
		if v < 0 || v != math.Trunc(v) || v > math.MaxInt64/2 {
			return nil, fmt.Errorf("dimension %d is %v, want a whole number ≥ 0", i, v)
		}
		shape[i] = int64(v)
	}
	return shape, nil
}

// sortedKeys returns the keys of kv in order, for deterministic output.
func sortedKeys(kv map[string]string) []string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
