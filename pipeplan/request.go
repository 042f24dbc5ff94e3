package pipeplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
)

// Request says how to plan a chain over several devices: the one shape of a pipeline
// request, which the CLI fills from its flags and the bindings decode straight from
// Python's JSON (UnmarshalJSON), and which the service and the planners read. Every
// field's zero value means its default (Algo: the planner registry's default pipeline
// algorithm; the options: Options'; TimeLimit: the algorithm's own), so that the CLI and
// Python, which leave out what the user did not give, plan alike.
//
// Its JSON form (docs/pipeline.md, "The request"): {"algo", "gpus", "memory_bytes",
// "min_memory", "faster_memory", "bandwidth", "weight_copies", "activation_model",
// "headroom", "no_temporaries", "checkpoint", "time_limit_s", "require_solver", "replan",
// "microbatches"}; every field may be left out. "memory_bytes" is a number of bytes or a
// size with the CLI's rule ("16GiB"), "bandwidth" a number of bytes per second or a
// string such as "12GB/s" (chainplan.ParseBytes, chainplan.ParseBandwidth), so that a
// caller sends what its user wrote and the sizes are read once, here.
type Request struct {
	// Algo is a Pipeline-family entry's name ("": the registry's default).
	Algo string `json:"algo,omitempty"`
	// Options are the platform (devices, memory per device, bandwidth) and the memory
	// model (weight copies, activation model, temporaries, headroom, checkpointing);
	// Options.MemoryBytes is ignored when MinMemory or FasterMemory is set.
	Options
	// MinMemory plans at the algorithm's smallest memory per device ("--memory min").
	MinMemory bool `json:"min_memory,omitempty"`
	// FasterMemory plans at the smallest memory per device at which the best contiguous
	// plan is faster than one device running the chain (its period below U(1,L)); every
	// pipeline algorithm is at least as fast there. When no memory gives such a plan, it
	// plans at the smallest memory of the fastest contiguous plan, and says so in a note
	// ("--memory faster").
	FasterMemory bool `json:"faster_memory,omitempty"`
	// TimeLimit bounds a solver's time (madpipe's scheduling MILP); 0: the algorithm's
	// default. Its JSON form is "time_limit_s", in seconds.
	TimeLimit time.Duration `json:"-"`
	// RequireSolver refuses the fallback of an algorithm whose solver is missing (madpipe
	// without a MILP solver returns the best contiguous plan, marked Fallback): an error
	// wrapping milp.ErrNoSolver instead. Algorithms that run no solver ignore it.
	RequireSolver bool `json:"require_solver,omitempty"`
	// Replan plans again even when the same request was planned on the same stored run
	// before (the service reuses that plan otherwise); the planners do not read it.
	Replan bool `json:"replan,omitempty"`
	// Microbatches, when positive, is written into the plan (its optional "microbatches"
	// field): the micro-batches per optimizer step its executor runs. The planners do not
	// read it.
	Microbatches int `json:"microbatches,omitempty"`
	// Source says who asks, recorded with the plan ("cli", "python"); set by the front end,
	// never read from JSON.
	Source string `json:"-"`
}

// requestJSON is Request's JSON form: its own fields, with the sizes that may be written
// as strings and the time limit in seconds in place of the Go fields they fill (a field
// of the outer struct hides the embedded one of the same JSON name).
type requestJSON struct {
	requestFields
	MemoryBytes flexNumber `json:"memory_bytes"`
	Bandwidth   flexNumber `json:"bandwidth"`
	TimeLimitS  float64    `json:"time_limit_s,omitempty"`
}

type requestFields Request // Request without its methods, so that decoding does not recurse

// flexNumber is a JSON number, or a string read by the parser of its field.
type flexNumber struct{ raw json.RawMessage }

func (f *flexNumber) UnmarshalJSON(b []byte) error {
	f.raw = append(json.RawMessage(nil), b...)
	return nil
}

func (f flexNumber) MarshalJSON() ([]byte, error) {
	if f.raw == nil {
		return []byte("0"), nil
	}
	return f.raw, nil
}

// read decodes what f holds into out: a JSON number as out's type reads it (an int64 reads
// whole numbers only, exactly), or a string through parse; out is left alone when f is
// absent or null. A value that is neither gives an *OptionError naming field, the option's
// name as OptionError spells it (memory, bandwidth).
func read[T int64 | float64](f flexNumber, field string, out *T, parse func(string) (T, error)) error {
	if len(f.raw) == 0 || string(f.raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(f.raw, &s) == nil {
		v, err := parse(s)
		if err != nil {
			return optionError(field, fmt.Sprintf("must be a number or a string such as %q: %v", example[field], err))
		}
		*out = v
		return nil
	}
	if err := json.Unmarshal(f.raw, out); err != nil {
		return optionError(field, fmt.Sprintf("must be %s or a string such as %q (got %s)", kind[field], example[field], f.raw))
	}
	return nil
}

var (
	example = map[string]string{"memory": "16GiB", "bandwidth": "12GB/s"}
	kind    = map[string]string{"memory": "a whole number of bytes", "bandwidth": "a number of bytes per second"}
)

// UnmarshalJSON reads the JSON form strictly: an unknown field, a size that does not read
// or a negative micro-batch count is an error naming it (wrapping chainplan.ErrUnsupported,
// as the other option errors do). The options themselves are checked when planning.
func (r *Request) UnmarshalJSON(b []byte) error {
	var w requestJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return decodeError{err}
	}
	var mem int64
	var bw float64
	if err := read(w.MemoryBytes, "memory", &mem, chainplan.ParseBytes); err != nil {
		return err
	}
	if err := read(w.Bandwidth, "bandwidth", &bw, chainplan.ParseBandwidth); err != nil {
		return err
	}
	if w.Microbatches < 0 {
		return optionError("microbatches", fmt.Sprintf("must be ≥ 1 (got %d)", w.Microbatches))
	}
	if w.TimeLimitS < 0 {
		return optionError("time_limit_s", fmt.Sprintf("must be a positive number of seconds (got %v)", w.TimeLimitS))
	}
	// A time.Duration holds about 292 years; beyond, the conversion would wrap around to a
	// negative limit.
	if w.TimeLimitS > maxTimeLimitS {
		return optionError("time_limit_s", fmt.Sprintf("must be at most %.0f seconds (got %v)", maxTimeLimitS, w.TimeLimitS))
	}
	*r = Request(w.requestFields)
	r.MemoryBytes, r.Bandwidth = mem, bw
	r.TimeLimit = time.Duration(w.TimeLimitS * float64(time.Second))
	r.Source = ""
	return nil
}

// MarshalJSON writes the JSON form UnmarshalJSON reads (sizes as numbers).
func (r Request) MarshalJSON() ([]byte, error) {
	w := requestJSON{requestFields: requestFields(r), TimeLimitS: r.TimeLimit.Seconds()}
	var err error
	if w.MemoryBytes.raw, err = json.Marshal(r.MemoryBytes); err != nil {
		return nil, err
	}
	if w.Bandwidth.raw, err = json.Marshal(r.Bandwidth); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// maxTimeLimitS is the largest time limit a time.Duration holds, in seconds.
const maxTimeLimitS = float64(math.MaxInt64) / float64(time.Second)

// decodeError is a request whose JSON does not read (a syntax error, an unknown field, a
// value of the wrong type): the decoder's words, wrapping chainplan.ErrUnsupported as the
// option errors do.
type decodeError struct{ err error }

func (e decodeError) Error() string   { return e.err.Error() }
func (e decodeError) Unwrap() []error { return []error{chainplan.ErrUnsupported, e.err} }
