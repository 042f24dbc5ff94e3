package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
)

// Format is the format tag of version 1 profiles, the value of their KeyFormat key.
const Format = "chainplan.profile/v1"

// Keys of the provenance as key-value pairs: the schema metadata of a profile file (what
// the Python profiler writes) and the metadata_json column of the store's runs table.
// Version 1 requires them all; free-text values may be empty.
const (
	KeyFormat         = "format"          // Metadata.Format
	KeyModelName      = "model_name"      // Metadata.ModelName
	KeyModelSignature = "model_signature" // Metadata.ModelSignature
	KeyTorchVersion   = "torch_version"   // Metadata.TorchVersion
	KeyDevice         = "device"          // Metadata.Device
	KeyDeviceName     = "device_name"     // Metadata.DeviceName
	KeyDType          = "dtype"           // Metadata.DType
	KeyBatchSize      = "batch_size"      // Metadata.BatchSize, decimal
	KeyInputShape     = "input_shape"     // Metadata.InputShape, a JSON array
	KeyThreads        = "threads"         // Metadata.Threads, decimal
	KeyTimingMethod   = "timing_method"   // Metadata.TimingMethod
	KeyWarmupReps     = "warmup_reps"     // Metadata.WarmupReps, decimal
	KeyReps           = "reps"            // Metadata.Reps, decimal
	KeyCreatedAt      = "created_at"      // Metadata.CreatedAt, RFC 3339
	KeyHost           = "host"            // Metadata.Host
)

// KeyCallSignature is an optional key (kept in Extra): the digest chainplan.profile
// writes of the call it measured (every argument's shape, dtype and non-tensor value, the
// loss and its target, the thread count and the device's name), by which a later
// profile() of the same call reuses the stored run instead of measuring again.
const KeyCallSignature = "call_signature"

// provenanceKeys are the keys of version 1 after KeyFormat, in the order ParseMetadata
// reports missing ones.
var provenanceKeys = [...]string{KeyModelName, KeyModelSignature, KeyTorchVersion, KeyDevice, KeyDeviceName,
	KeyDType, KeyBatchSize, KeyInputShape, KeyThreads, KeyTimingMethod, KeyWarmupReps, KeyReps, KeyCreatedAt, KeyHost}

// Metadata is the provenance of a profile: which model was measured, with which software,
// on which machine, and how. A profile file keeps it as key-value pairs (Map,
// ParseMetadata); the store keeps it in the runs table, one column per field.
type Metadata struct {
	Format         string    // the profile format, Format
	ModelName      string    // the model's name, not empty
	ModelSignature string    // a digest of the model's structure
	TorchVersion   string    // torch.__version__
	Device         string    // "cpu", "cuda:0", ...
	DeviceName     string    // "NVIDIA H100 80GB HBM3", a CPU model, ...
	DType          string    // "float32", "bfloat16", ...
	BatchSize      int64     // ≥ 1
	InputShape     []int64   // the shape of the model's input, dimensions ≥ 0
	Threads        int64     // ≥ 1, torch.get_num_threads()
	TimingMethod   string    // "cuda_event", "perf_counter", ...
	WarmupReps     int64     // ≥ 0, untimed repetitions first
	Reps           int64     // ≥ 1, timed repetitions (or training steps)
	CreatedAt      time.Time // when the profile was taken
	Host           string    // host name
	// Extra holds every other key-value pair (pandas writes one into Arrow files, for
	// instance), nil when there is none.
	Extra map[string]string
}

// Map returns the metadata as key-value pairs: the Key constants, then Extra's other keys.
// An empty Format is written as Format.
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

// SetExtra sets Extra to the pairs of kv whose key is not one of the Key constants (nil
// when there are none), so that Map gives kv back.
func (m *Metadata) SetExtra(kv map[string]string) {
	m.Extra = nil
	for k, v := range kv {
		if isProvenanceKey(k) {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]string{}
		}
		m.Extra[k] = v
	}
}

func isProvenanceKey(k string) bool { return k == KeyFormat || slices.Contains(provenanceKeys[:], k) }

// MetadataError is a key-value pair ParseMetadata refuses.
type MetadataError struct {
	Key string // the key at fault
	Msg string // what is wrong with it
}

func (e *MetadataError) Error() string { return fmt.Sprintf("metadata key %q: %s", e.Key, e.Msg) }

// ParseMetadata checks and decodes key-value pairs that Map wrote (or the Python profiler).
// The format key is checked first, so that a profile of another version is reported as
// such (an error wrapping chainplan.ErrSchemaVersion) rather than as missing keys; every
// other problem is a *MetadataError naming the key.
func ParseMetadata(kv map[string]string) (Metadata, error) {
	format, ok := kv[KeyFormat]
	switch {
	case !ok:
		return Metadata{}, &MetadataError{Key: KeyFormat,
			Msg: fmt.Sprintf("missing; this is not a chainplan profile (want %q in the schema metadata)", Format)}
	}
	if err := chainplan.CheckFormat(format, nil, Format); err != nil {
		if errors.Is(err, chainplan.ErrSchemaVersion) {
			return Metadata{}, err
		}
		return Metadata{}, &MetadataError{Key: KeyFormat, Msg: err.Error()}
	}
	var missing []string
	for _, k := range provenanceKeys {
		if _, ok := kv[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Metadata{}, &MetadataError{Key: missing[0],
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
		return Metadata{}, &MetadataError{Key: KeyModelName, Msg: "empty"}
	}
	ints := []struct {
		key string
		dst *int64
		min int64
	}{{KeyBatchSize, &m.BatchSize, 1}, {KeyThreads, &m.Threads, 1}, {KeyWarmupReps, &m.WarmupReps, 0}, {KeyReps, &m.Reps, 1}}
	for _, f := range ints {
		v, err := strconv.ParseInt(strings.TrimSpace(kv[f.key]), 10, 64)
		if err != nil {
			return Metadata{}, &MetadataError{Key: f.key, Msg: fmt.Sprintf("%q is not an integer", kv[f.key])}
		}
		if v < f.min {
			return Metadata{}, &MetadataError{Key: f.key, Msg: fmt.Sprintf("%d is below the minimum %d", v, f.min)}
		}
		*f.dst = v
	}
	shape, err := parseShape(kv[KeyInputShape])
	if err != nil {
		return Metadata{}, &MetadataError{Key: KeyInputShape, Msg: err.Error()}
	}
	m.InputShape = shape
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(kv[KeyCreatedAt]))
	if err != nil {
		return Metadata{}, &MetadataError{Key: KeyCreatedAt,
			Msg: fmt.Sprintf("%q is not an RFC 3339 time such as 2025-01-31T12:00:00Z", kv[KeyCreatedAt])}
	}
	m.CreatedAt = t.UTC()
	if err := checkParallelKeys(kv); err != nil {
		return Metadata{}, err
	}
	m.SetExtra(kv)
	if _, err := m.Towers(); err != nil {
		return Metadata{}, err
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
