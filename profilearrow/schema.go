package profilearrow

import (
	"errors"
	"sort"

	"github.com/chainplan/chainplan/profile"
)

// Column names of version 1 (profile.Format), one per field of a profile.Row. The unit is
// part of every measurement's name.
const (
	ColStageIndex  = "stage_index"   // 1..L, L+1 for the loss
	ColStageName   = "stage_name"    // the module's name
	ColStageKind   = "stage_kind"    // profile.KindStage or profile.KindLoss
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
	kindBool                  // bool
)

func (k colKind) String() string {
	switch k {
	case kindInt:
		return "an integer type (int64 preferred)"
	case kindFloat:
		return "float64 (or float32)"
	case kindBool:
		return "bool"
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

// metadata checks and decodes the schema metadata (profile.ParseMetadata), reporting a
// refused key as an *Error.
func metadata(kv map[string]string) (profile.Metadata, error) {
	m, err := profile.ParseMetadata(kv)
	if me, ok := errors.AsType[*profile.MetadataError](err); ok {
		return m, &Error{Key: me.Key, Row: -1, Msg: me.Msg}
	}
	return m, err
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
