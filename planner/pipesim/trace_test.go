package pipesim_test

import (
	"encoding/json"
	"testing"

	"github.com/chainplan/chainplan/planner/pipesim"
)

// TestChromeTrace reads a trace back: one complete event per task with its stage, the
// processes and threads named, and each device's memory counter peaking at the device's
// peak.
func TestChromeTrace(t *testing.T) {
	su := mustSetup(t, []float64{1, 2, 1}, []float64{2, 3, 2}, []int64{8, 4, 4, 4}, 2, pipesim.SetupOptions{Checkpointed: []int{1}})
	for _, sched := range []pipesim.Schedule{pipesim.OneFOneBFlush, pipesim.TiMePReSt} {
		r := mustSimulate(t, su, pipesim.Options{Schedule: sched, Microbatches: 3, Minibatches: 2, Record: true})
		b, err := pipesim.ChromeTrace(r)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []struct {
				Name string         `json:"name"`
				Ph   string         `json:"ph"`
				Ts   float64        `json:"ts"`
				Dur  float64        `json:"dur"`
				Pid  int            `json:"pid"`
				Tid  int            `json:"tid"`
				Args map[string]any `json:"args"`
			} `json:"traceEvents"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		tasks, threads := 0, 0
		peak := map[int]float64{}
		for _, e := range doc.TraceEvents {
			switch e.Ph {
			case "X":
				tasks++
				if _, ok := e.Args["stage"]; !ok || e.Dur < 0 || e.Ts < 0 || e.Ts+e.Dur > r.Makespan*1e6+1e-3 {
					t.Fatalf("%s: bad event %+v", sched, e)
				}
			case "M":
				if e.Name == "thread_name" {
					threads++
				}
			case "C":
				var dev int
				for d := range r.PerDevice {
					if e.Name == "memory, device "+string(rune('0'+d)) {
						dev = d
					}
				}
				peak[dev] = max(peak[dev], e.Args["bytes"].(float64))
			}
		}
		if tasks != len(r.Timeline) || threads != len(r.Resources) {
			t.Fatalf("%s: %d tasks and %d threads, want %d and %d", sched, tasks, threads, len(r.Timeline), len(r.Resources))
		}
		for d, x := range r.PerDevice {
			if peak[d] != float64(x.PeakBytes) {
				t.Fatalf("%s: device %d's counter peaks at %v, its peak is %d", sched, d, peak[d], x.PeakBytes)
			}
		}
	}
	if _, err := pipesim.ChromeTrace(mustSimulate(t, su, pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 2})); err == nil {
		t.Fatal("a trace of a run that recorded nothing")
	}
}
