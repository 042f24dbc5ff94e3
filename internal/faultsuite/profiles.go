package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// profileFile is a profile file the suite wrote, with what the store must hold once it
// is ingested: one run with stages+1 stages (the loss included) and (stages+1)*reps
// measurements, found by the file's content hash.
type profileFile struct {
	path   string
	sha256 string
	stages int // L, the loss excluded
	reps   int
}

// rows returns the number of measurement rows the file holds.
func (f profileFile) rows() int { return (f.stages + 1) * f.reps }

// writeProfile writes profile number id (a seed: its values and content hash are unique
// to it) with the given shape into dir, as chainplan.profile writes them.
func writeProfile(dir string, id uint64, stages, reps int) (profileFile, error) {
	rng := rand.New(rand.NewPCG(id, 0xfa17))
	meta := profile.Metadata{Format: profile.Format, ModelName: fmt.Sprintf("fault-%d", stages),
		ModelSignature: fmt.Sprintf("sha256:fault-%d", stages), TorchVersion: "2.6.0", Device: "cpu",
		DeviceName: "fault suite", DType: "float32", BatchSize: 8, InputShape: []int64{8, 1024}, Threads: 1,
		TimingMethod: "perf_counter", WarmupReps: 1, Reps: int64(reps),
		CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Second),
		Host:      "faultsuite", Extra: map[string]string{"fault_id": fmt.Sprint(id)}}
	var rows []profile.Row
	in := int64(8 * 1024 * 4)
	type stage struct {
		name, kind string
		m          profile.Measures
	}
	var ss []stage
	for k := range stages {
		out := int64(1+rng.IntN(64)) << 14
		ss = append(ss, stage{fmt.Sprintf("layers.%d", k), profile.KindStage, profile.Measures{
			FwdTimeS: 1e-4 + 1e-3*rng.Float64(), BwdTimeS: 2e-4 + 2e-3*rng.Float64(), InBytes: in, OutBytes: out,
			SavedBytes:  profile.NullInt64{Int64: out * int64(1+rng.IntN(3)), Valid: true},
			FwdTmpBytes: profile.NullInt64{Int64: int64(rng.IntN(8)) << 12, Valid: true},
			BwdTmpBytes: profile.NullInt64{Int64: int64(rng.IntN(8)) << 14, Valid: true},
			ParamBytes:  int64(rng.IntN(1 << 20))}})
		in = out
	}
	ss = append(ss, stage{"loss", profile.KindLoss, profile.Measures{FwdTimeS: 5e-5, BwdTimeS: 4e-5, InBytes: in,
		SavedBytes: profile.NullInt64{Valid: true}, FwdTmpBytes: profile.NullInt64{Valid: true},
		BwdTmpBytes: profile.NullInt64{Int64: 4096, Valid: true}}})
	for i, s := range ss {
		for r := range reps {
			m := s.m
			m.FwdTimeS *= 0.9 + 0.2*rng.Float64()
			m.BwdTimeS *= 0.9 + 0.2*rng.Float64()
			rows = append(rows, profile.Row{StageIndex: i + 1, StageName: s.name, StageKind: s.kind, Rep: r, Measures: m})
		}
	}
	var buf bytes.Buffer
	if err := profilearrow.Write(&buf, &profilearrow.Profile{Meta: meta, Rows: rows}, profilearrow.WriteOptions{}); err != nil {
		return profileFile{}, err
	}
	path := filepath.Join(dir, fmt.Sprintf("profile-%d.arrow", id))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return profileFile{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return profileFile{path: path, sha256: hex.EncodeToString(sum[:]), stages: stages, reps: reps}, nil
}
