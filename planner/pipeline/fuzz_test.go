package pipeline_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// FuzzParse: Parse never panics, and what it accepts writes back to a document it reads
// as the same plan.
func FuzzParse(f *testing.F) {
	_, p := nonContiguous(f)
	good, err := p.MarshalIndent()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format":"chainplan.pipeline/v1"}`))
	f.Add([]byte(strings.Replace(string(good), `"shift": 3`, `"shift": 3e0`, 1)))
	f.Add([]byte(`{"format":"chainplan.pipeline/v1","algo":"x","gpus":1,"memory_bytes":0,"bandwidth":1,` +
		`"weight_copies":3,"activation_model":"input","period":1,"stages":[],"pattern":[],"memory_per_gpu":[],"contiguous":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := pipeplan.Parse(data)
		if err != nil {
			return
		}
		out, err := p.MarshalIndent()
		if err != nil {
			t.Fatalf("accepted, yet cannot be written: %v", err)
		}
		q, err := pipeplan.Parse(out)
		if err != nil {
			t.Fatalf("written plan refused: %v\n%s", err, out)
		}
		// MarshalIndent writes nil slices as empty ones.
		for _, x := range []*pipeplan.Plan{p, q} {
			if x.Stages == nil {
				x.Stages = []pipeplan.Stage{}
			}
			if x.Pattern == nil {
				x.Pattern = []pipeplan.Op{}
			}
			if x.MemoryPerGPU == nil {
				x.MemoryPerGPU = []int64{}
			}
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, q)
		}
	})
}

// FuzzValidate moves operations of a valid 1F1B* plan in time and in shift, then compares
// the validator's verdict on dependencies and exclusivity, and its memory peaks, with the
// naive unrolled check; a document the fuzzer writes itself is validated too, which must
// not panic.
func FuzzValidate(f *testing.F) {
	f.Add(uint64(1), []byte{0, 3, 1, 2, 200, 7})
	f.Add(uint64(2), []byte{})
	f.Add(uint64(3), []byte{5, 5, 5, 1, 0, 255, 9, 9})
	f.Fuzz(func(t *testing.T, seed uint64, moves []byte) {
		rng := rand.New(rand.NewPCG(seed, 99))
		pr := randomProblem(t, rng, 6)
		st := randomPartition(rng, pr.L(), pr.Options().GPUs)
		var load float64
		for _, s := range st {
			load = max(load, pr.U(s.First, s.Last), pr.Comm(s.Last))
		}
		p, err := pipeline.OneFOneBStar(pr, st, load*(1+rng.Float64()))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+2 < len(moves); i += 3 {
			o := &p.Pattern[int(moves[i])%len(p.Pattern)]
			switch moves[i+1] % 3 {
			case 0:
				o.Start = math.Mod(o.Start+float64(moves[i+2])/32*p.Period, p.Period)
			case 1:
				o.Shift += int(moves[i+2]%5) - 2
			default:
				o.Start = float64(moves[i+2]%8) / 8 * p.Period
			}
		}
		pr = pr.WithMemory(math.MaxInt64 / 8)
		rep := pipeline.Validate(pr, p)
		var deps, overlaps int
		for _, is := range rep.Issues {
			switch {
			case strings.Contains(is.Msg, "for the same mini-batch"):
				deps++
			case strings.Contains(is.Msg, "overlaps"), strings.Contains(is.Msg, "in all"):
				overlaps++
			}
		}
		uDeps, uOverlaps, peaks := unrolled(pr, p)
		if (deps == 0) != (uDeps == 0) || (overlaps == 0) != (uOverlaps == 0) {
			t.Fatalf("validator: %d dependency and %d exclusivity issues; unrolled: %d and %d\n%v",
				deps, overlaps, uDeps, uOverlaps, rep.Issues)
		}
		if deps == 0 && !slices.Equal(peaks, activationPeaks(rep)) {
			t.Fatalf("peaks: unrolled %v, validator %v", peaks, activationPeaks(rep))
		}
	})
}
