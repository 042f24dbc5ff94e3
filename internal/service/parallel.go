package service

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
	"github.com/chainplan/chainplan/store"
)

// ParallelInput is what the parallel planners advise on: a workload and the cluster, and
// the stored run it came from (none for a chain file: nothing is recorded then).
type ParallelInput struct {
	Model   *workload.Model
	Cluster *cluster.Cluster
	RunID   int64 // 0: not a stored run
	// Source says who asks, recorded with the advice (SourceCLI, SourcePython).
	Source string
	// NominalLinks plans on the cluster file's bandwidths even where the store holds
	// measured ones for the run (plannedCluster).
	NominalLinks bool
}

// ChainWorkload returns the workload of chain file c measured at batch batch, named name
// (the file's base name), δ = dtypeBytes (0: 4).
func ChainWorkload(c *chainplan.Chain, name string, batch, dtypeBytes int64) (*workload.Model, error) {
	if batch < 1 {
		return nil, &inputError{fmt.Sprintf("the batch size the chain was measured at is required (≥ 1, got %d): "+
			"chain files do not record it", batch)}
	}
	return workload.FromChain(c, name, batch, dtypeBytes)
}

// RunWorkload returns the workload of stored run ref (its provenance, stages and parallel
// fields) and the run's id.
func (s *Service) RunWorkload(ctx context.Context, ref RunRef) (*workload.Model, int64, error) {
	r, err := s.Run(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	stages, err := s.db.Stages(ctx, r.ID)
	if err != nil {
		return nil, 0, err
	}
	m, err := workload.FromProfile(r.Metadata, stages)
	if err != nil {
		return nil, 0, fmt.Errorf("run %d: %w", r.ID, err)
	}
	return m, r.ID, nil
}

// Advised is an advise or search3d result and the id it was stored under (0 when not
// stored: a chain file, or no database).
type Advised struct {
	AdviceID int64
	Advice   *paradl.Advice
	Search   *amp.Result
}

// Advise ranks the strategies of o for in (planner.Advise) on the planned cluster (the
// bandwidths measured for a stored run in place of the file's: plannedCluster) and, for a
// stored run with a database, records the advice (with the file's cluster; the result
// lists the measured links). Errors are the planner's, and the store's.
func (s *Service) Advise(ctx context.Context, in ParallelInput, o paradl.Options) (*Advised, error) {
	cl, links, notes, err := s.plannedCluster(ctx, in)
	if err != nil {
		return nil, err
	}
	a, err := planner.Advise(in.Model, cl, o)
	if err != nil {
		return nil, err
	}
	a.Notes, a.MeasuredLinks = append(a.Notes, notes...), links
	out := &Advised{Advice: a}
	if s != nil && in.RunID > 0 {
		cands := make([]store.AdviceCandidate, 0, len(a.Candidates))
		for i, c := range a.Candidates {
			detail, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			cands = append(cands, store.AdviceCandidate{Candidate: i, Rank: c.Rank, Strategy: string(c.Strategy),
				Devices: c.Devices, DataDegree: nullInt(c.DataDegree), SplitDegree: nullInt(c.SplitDegree),
				Feasible: c.Feasible, IterationTimeS: c.IterationTimeS,
				EpochTimeS:  sql.NullFloat64{Float64: c.EpochTimeS, Valid: true},
				MemoryBytes: c.MemoryBytes, CapacityBytes: c.CapacityBytes, DetailJSON: detail})
		}
		if out.AdviceID, err = s.recordAdvice(ctx, in, planner.AlgoAdvise, o, a, a.SolveMS, cands); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Search3D runs the 3-D search of o for in (planner.Search3D) on the planned cluster, as
// Advise does, and, for a stored run with a database, records the result: its top-K
// candidates, and Megatron's pick as candidate −1.
func (s *Service) Search3D(ctx context.Context, in ParallelInput, o amp.Options) (*Advised, error) {
	cl, links, notes, err := s.plannedCluster(ctx, in)
	if err != nil {
		return nil, err
	}
	r, err := planner.Search3D(in.Model, cl, o)
	if err != nil {
		return nil, err
	}
	r.Notes, r.MeasuredLinks = append(r.Notes, notes...), links
	out := &Advised{Search: r}
	if s != nil && in.RunID > 0 {
		var cands []store.AdviceCandidate
		add := func(i int, c *amp.Candidate, strategy string) error {
			detail, err := json.Marshal(c)
			if err != nil {
				return err
			}
			var mem, capacity int64
			for _, st := range c.Stages {
				mem, capacity = max(mem, st.MemoryBytes), max(capacity, st.CapacityBytes)
			}
			cands = append(cands, store.AdviceCandidate{Candidate: i, Rank: c.Rank, Strategy: strategy,
				Devices: c.PP * c.DP * c.TMP, PP: nullInt(c.PP), DP: nullInt(c.DP), TMP: nullInt(c.TMP), MBS: nullInt(c.MBS),
				Feasible: c.Fits, IterationTimeS: c.IterationTimeS, MemoryBytes: mem, CapacityBytes: capacity, DetailJSON: detail})
			return nil
		}
		for i := range r.Candidates {
			if err := add(i, &r.Candidates[i], "3d"); err != nil {
				return nil, err
			}
		}
		if r.Megatron != nil {
			if err := add(-1, r.Megatron, "megatron"); err != nil {
				return nil, err
			}
		}
		if out.AdviceID, err = s.recordAdvice(ctx, in, planner.AlgoSearch3D, o, r, r.SolveMS, cands); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Service) recordAdvice(ctx context.Context, in ParallelInput, kind string, request, result any, solveMS float64,
	cands []store.AdviceCandidate) (int64, error) {
	if err := checkSource(in.Source); err != nil {
		return 0, err
	}
	req, err := json.Marshal(request)
	if err != nil {
		return 0, err
	}
	res, err := json.Marshal(result)
	if err != nil {
		return 0, err
	}
	return s.db.RecordAdvice(ctx, &store.Advice{Kind: kind, RunID: sql.NullInt64{Int64: in.RunID, Valid: true},
		ModelName: in.Model.Name, ClusterName: in.Cluster.Name, ClusterJSON: in.Cluster.Canonical(),
		NumNodes: len(in.Cluster.Nodes), NumDevices: in.Cluster.NumDevices(), Source: in.Source, RequestJSON: req,
		ResultJSON: res, SolveMS: solveMS, Version: s.version, Candidates: cands})
}

func nullInt(v int) sql.NullInt64 { return sql.NullInt64{Int64: int64(v), Valid: v != 0} }

// NoCandidateError reports an advice without a feasible candidate, with the least memory
// per device any candidate needs.
type NoCandidateError struct {
	LeastBytes    int64 // the smallest memory per device of any candidate
	CapacityBytes int64 // what that candidate's devices have
	Reason        string
}

func (e *NoCandidateError) Error() string {
	if e.LeastBytes > e.CapacityBytes {
		return fmt.Sprintf("advise: no candidate is feasible; the least memory any needs is %s per device (its devices have %s)",
			chainplan.FormatBytes(e.LeastBytes), chainplan.FormatBytes(e.CapacityBytes))
	}
	return "advise: no candidate is feasible (" + e.Reason + ")"
}

// Hint says what could make a candidate fit.
func (e *NoCandidateError) Hint() string {
	return "evaluate more devices (--devices), allow checkpointing (--allow-checkpointing rotor), or lower the batch"
}

// Unwrap makes errors.Is(err, chainplan.ErrInfeasible) true (exit status 3).
func (e *NoCandidateError) Unwrap() error { return chainplan.ErrInfeasible }

// SmallestFeasibleBytes is the least memory per device any candidate needs, 0 when no
// strategy applies (chainplan.Infeasibility).
func (e *NoCandidateError) SmallestFeasibleBytes() int64 { return max(e.LeastBytes, 0) }

// CheckFeasible returns a *NoCandidateError when no candidate of a is feasible.
func CheckFeasible(a *paradl.Advice) error {
	if len(a.Candidates) == 0 {
		return &NoCandidateError{Reason: "no strategy applies at the device counts asked"}
	}
	e := &NoCandidateError{LeastBytes: -1}
	for _, c := range a.Candidates {
		if c.Feasible {
			return nil
		}
		if e.LeastBytes < 0 || c.MemoryBytes < e.LeastBytes {
			e.LeastBytes, e.CapacityBytes, e.Reason = c.MemoryBytes, c.CapacityBytes, c.Infeasible
		}
	}
	return e
}
