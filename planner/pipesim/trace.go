package pipesim

import (
	"encoding/json"
	"fmt"
	"math"
)

// traceEvent is one event of the Chrome trace format ("Trace Event Format"): a complete
// event (ph X) for a task, a counter (ph C) for a device's memory, metadata (ph M) naming
// the processes and threads.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// UnitTimeScale is the duration of one time point in a unit-time trace, in microseconds
// (the trace format's unit): 1 ms, so that the time axis reads in time points ×1000 µs.
const UnitTimeScale = 1000

// ChromeTrace returns the recorded timeline of r (Options.Record) as a Chrome trace (JSON,
// for chrome://tracing and Perfetto): one process for the devices and one for the links,
// one thread per resource, one complete event per task named like "F 3.1" (forward of
// micro-batch 1 of mini-batch 3, 1-based; "B 3" for a whole mini-batch's backward) with
// its stage and weight version in args, and a counter of each device's memory (static,
// activations and extra weight versions, as DeviceStats.PeakBytes counts them).
// Times are the chain's seconds as microseconds (UnitTimeScale per time point in unit
// time). Errors: a result recorded without Options.Record.
func ChromeTrace(r *Result) ([]byte, error) {
	if r.Resources == nil {
		return nil, optionErr("trace", "the simulation did not record its timeline (Options.Record)")
	}
	scale := 1e6
	if r.UnitTime {
		scale = UnitTimeScale
	}
	ts := func(t float64) float64 { return math.Round(t*scale*1000) / 1000 } // to the nanosecond
	devices := len(r.PerDevice)
	where := func(res int) (pid, tid int) {
		if res < devices {
			return 1, res
		}
		return 2, res - devices
	}
	events := []traceEvent{
		{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": fmt.Sprintf("%s: devices", r.Schedule)}},
		{Name: "process_name", Ph: "M", Pid: 2, Args: map[string]any{"name": "links"}},
	}
	for res, name := range r.Resources {
		pid, tid := where(res)
		events = append(events, traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}})
	}
	for _, sp := range r.Timeline {
		pid, tid := where(sp.Resource)
		d := ts(sp.End) - ts(sp.Start)
		name := fmt.Sprintf("%s %d", sp.Kind, sp.Minibatch+1)
		if sp.Microbatch >= 0 {
			name += fmt.Sprintf(".%d", sp.Microbatch+1)
		}
		args := map[string]any{"stage": sp.Stage, "minibatch": sp.Minibatch + 1}
		if sp.Microbatch >= 0 {
			args["microbatch"] = sp.Microbatch + 1
			if m := r.PerMinibatch[sp.Minibatch]; sp.Microbatch < len(m.ForwardVersions) && (sp.Kind == "F" || r.Schedule != TiMePReSt) {
				args["weight_version"] = m.ForwardVersions[sp.Microbatch]
			}
		} else {
			args["weight_version"] = r.PerMinibatch[sp.Minibatch].BackwardVersion
		}
		events = append(events, traceEvent{Name: name, Cat: kindCategory(sp.Kind), Ph: "X", Ts: ts(sp.Start), Dur: &d,
			Pid: pid, Tid: tid, Args: args})
	}
	for _, m := range r.Memory {
		events = append(events, traceEvent{Name: fmt.Sprintf("memory, device %d", m.Device), Ph: "C", Ts: ts(m.Time), Pid: 1,
			Args: map[string]any{"bytes": r.PerDevice[m.Device].StaticBytes + m.Bytes}})
	}
	return json.Marshal(map[string]any{"traceEvents": events, "displayTimeUnit": "ms",
		"otherData": map[string]any{"format": Format, "schedule": r.Schedule, "microbatches": r.Microbatches, "minibatches": r.Minibatches}})
}

func kindCategory(k string) string {
	switch k {
	case "F":
		return "forward"
	case "B":
		return "backward"
	case "R":
		return "recompute"
	}
	return "transfer"
}
