package profilearrow_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// sampleProfile returns a valid profile of stages stages plus a loss, reps repetitions
// each, rows stage-major: row (k-1)*reps + r is stage k, repetition r; the loss rows come
// last. Values are drawn from a PCG seeded with seed.
func sampleProfile(stages, reps int, seed uint64) *profilearrow.Profile {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &profilearrow.Profile{Meta: profile.Metadata{
		Format:         profile.Format,
		ModelName:      "sample",
		ModelSignature: fmt.Sprintf("sha256:%016x", seed),
		TorchVersion:   "2.15.0",
		Device:         "cuda:0",
		DeviceName:     "NVIDIA H100 80GB HBM3",
		DType:          "bfloat16",
		BatchSize:      32,
		InputShape:     []int64{32, 3, 224, 224},
		Threads:        16,
		TimingMethod:   "cuda_event",
		WarmupReps:     3,
		Reps:           int64(reps),
		CreatedAt:      time.Date(2025, 7, 1, 9, 30, 0, 123000000, time.UTC),
		Host:           "gpu-node-7",
		Extra:          map[string]string{"note": "go"},
	}}
	in := int64(32 * 3 * 224 * 224 * 2)
	for k := 1; k <= stages; k++ {
		out := int64(1+rng.IntN(64)) << 16
		saved := out + int64(rng.IntN(4))<<16
		ftmp, btmp := int64(rng.IntN(8))<<12, int64(rng.IntN(8))<<14
		params := int64(rng.IntN(1 << 20))
		fwd, bwd := 1e-4+rng.Float64()*1e-3, 2e-4+rng.Float64()*2e-3
		for r := 0; r < reps; r++ {
			p.Rows = append(p.Rows, profile.Row{
				StageIndex: k, StageName: fmt.Sprintf("layers.%d", k-1), StageKind: profile.KindStage, Rep: r,
				Measures: profile.Measures{
					FwdTimeS: fwd * (0.95 + 0.1*rng.Float64()), BwdTimeS: bwd * (0.95 + 0.1*rng.Float64()),
					InBytes: in, OutBytes: out, SavedBytes: valid(saved), FwdTmpBytes: valid(ftmp),
					BwdTmpBytes: valid(btmp + int64(r)*4096), ParamBytes: params,
				},
			})
		}
		in = out
	}
	for r := 0; r < reps; r++ {
		p.Rows = append(p.Rows, profile.Row{
			StageIndex: stages + 1, StageName: "loss", StageKind: profile.KindLoss, Rep: r,
			Measures: profile.Measures{
				FwdTimeS: 1e-5 * (1 + rng.Float64()), BwdTimeS: 1e-5 * (1 + rng.Float64()),
				InBytes: in, SavedBytes: valid(0), FwdTmpBytes: valid(0), BwdTmpBytes: valid(4096),
			},
		})
	}
	return p
}

func valid(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }

// mustEncode writes p with opts and returns the bytes.
func mustEncode(tb testing.TB, p *profilearrow.Profile, opts profilearrow.WriteOptions) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := profilearrow.Write(&buf, p, opts); err != nil {
		tb.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}
