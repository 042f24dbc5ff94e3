package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// pipesimRequest is the JSON form of a simulation request from Python (chainplan.pipesim):
// service.PipesimRequest's fields, the plan as a document, and which of the trace and the
// picture to return.
type pipesimRequest struct {
	Schedule        string          `json:"schedule"`
	Stages          string          `json:"stages"`
	Plan            json.RawMessage `json:"plan"`
	PlanID          int64           `json:"plan_id"`
	Microbatches    int             `json:"microbatches"`
	Minibatches     int             `json:"minibatches"`
	UnitTime        bool            `json:"unit_time"`
	Bandwidth       float64         `json:"bandwidth"`
	AlphaS          float64         `json:"alpha_s"`
	WeightCopies    int             `json:"weight_copies"`
	ActivationModel string          `json:"activation_model"`
	MemoryBytes     int64           `json:"memory_bytes"`
	Checkpoint      []int           `json:"checkpoint"`
	CheckpointAll   bool            `json:"checkpoint_all"`
	MaxInflight     int             `json:"max_inflight"`
	Flush           bool            `json:"flush"`
	// Trace asks for the Chrome trace, SVG for the Gantt picture of the first
	// PlotMinibatches mini-batches (0: plot.DefaultPeriods).
	Trace           bool `json:"trace"`
	SVG             bool `json:"svg"`
	PlotMinibatches int  `json:"plot_minibatches"`
}

func parsePipesimRequest(s string) (pipesimRequest, service.PipesimRequest, error) {
	var r pipesimRequest
	if err := strictUnmarshal(s, &r); err != nil {
		return r, service.PipesimRequest{}, fmt.Errorf("%w: request: %v", errBadRequest, err)
	}
	req := service.PipesimRequest{Schedule: r.Schedule, Stages: r.Stages, PlanID: r.PlanID, Microbatches: r.Microbatches,
		Minibatches: r.Minibatches, UnitTime: r.UnitTime, Bandwidth: r.Bandwidth, AlphaS: r.AlphaS, WeightCopies: r.WeightCopies,
		ActivationModel: r.ActivationModel, MemoryBytes: r.MemoryBytes, Checkpoint: r.Checkpoint, CheckpointAll: r.CheckpointAll,
		MaxInflight: r.MaxInflight, Flush: r.Flush, Record: r.Trace || r.SVG, Source: service.SourcePython}
	if len(r.Plan) > 0 && string(r.Plan) != "null" {
		p, err := pipeplan.Parse(r.Plan)
		if err != nil {
			return r, req, err
		}
		req.Plan = p
	}
	if r.PlotMinibatches < 0 {
		return r, req, fmt.Errorf("%w: plot_minibatches must be ≥ 1 (got %d)", errBadRequest, r.PlotMinibatches)
	}
	return r, req, nil
}

// pipesimDocument is what Pipesim and PipesimRun return: the chainplan.pipesim/v1 result,
// the Chrome trace and the SVG picture when asked, and for a stored run where the
// simulation was recorded and the runner's measurements beside it.
func pipesimDocument(r pipesimRequest, res *pipesim.Result, stored *service.SimulatedRun) (string, error) {
	out := map[string]any{"simulation": res}
	if r.Trace {
		b, err := pipesim.ChromeTrace(res)
		if err != nil {
			return "", err
		}
		out["trace"] = json.RawMessage(b)
	}
	if r.SVG {
		d, err := plot.SimulationOf(res, r.PlotMinibatches)
		if err != nil {
			return "", err
		}
		fig, err := plot.Pipeline(d)
		if err != nil {
			return "", err
		}
		svg, err := fig.SVG()
		if err != nil {
			return "", err
		}
		out["svg"] = string(svg)
	}
	if stored != nil {
		out["run_id"], out["simulation_id"] = stored.RunID, stored.SimulationID
		out["comparisons"] = stored.Comparisons
		if stored.Comparisons == nil {
			out["comparisons"] = []service.RankComparison{}
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// Pipesim simulates a pipeline schedule on the chain chainJSON (chainplan.chain/v1) as
// requestJSON asks ({"schedule": "1f1b-flush", "stages": "4", "microbatches": 8, ...}; the
// fields of pipesimRequest, "plan" a chainplan.pipeline/v1 document) and returns
// {"simulation": {...}} with "trace" and "svg" when asked. Nothing is stored.
func Pipesim(chainJSON, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	c, err := chainplan.ParseChain([]byte(chainJSON))
	if err != nil {
		return "", codedError(err)
	}
	r, req, err := parsePipesimRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	if req.PlanID != 0 {
		return "", codedError(fmt.Errorf("%w: a stored plan (plan_id) is simulated on its run: use PipesimRun", errBadRequest))
	}
	res, err := service.Simulate(c, req)
	if err != nil {
		return "", codedError(err)
	}
	doc, err := pipesimDocument(r, res, nil)
	return doc, codedError(err)
}

// PipesimRun simulates the chain of stored run runID (or, with runID 0 and a "plan_id", the
// stored plan on its run's chain) as Pipesim does, records the simulation and returns the
// document with "run_id", "simulation_id" and "comparisons": the runner's stored
// executions of the plan, rank by rank, beside the simulation of their step.
func PipesimRun(dbPath string, runID int64, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	r, req, err := parsePipesimRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	ref := service.RunRef{}
	if runID != 0 || req.PlanID == 0 {
		ref = service.RunID(runID)
	}
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		got, err := s.SimulateRun(ctx, ref, req)
		if err != nil {
			return err
		}
		result, err = pipesimDocument(r, got.Result, got)
		return err
	})
	return result, err
}
