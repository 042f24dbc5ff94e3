package pybind

import (
	"context"
	"encoding/json"
	"fmt"

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

// pipesimDocument is what Pipesim returns: the chainplan.pipesim/v1 result,
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

// Pipesim simulates a pipeline schedule on the chain of the source of callJSON
// ({"source": {...}, "request": {...}}; the request holds the fields of pipesimRequest:
// {"schedule": "1f1b-flush", "stages": "4", "microbatches": 8, ...}, "plan" a
// chainplan.pipeline/v1 document) and returns {"simulation": {...}} with "trace" and
// "svg" when asked. A stored run's simulation (or, with a "plan_id" and a source giving
// only the database, the stored plan's on its run's chain) is recorded, and the document
// has "run_id", "simulation_id" and "comparisons": the runner's stored executions of the
// plan, rank by rank, beside the simulation of their step.
func Pipesim(callJSON string) (result string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "pipesim", &c); err != nil {
		return "", codedError(err)
	}
	r, req, err := parsePipesimRequest(c.request())
	if err != nil {
		return "", codedError(err)
	}
	if !c.Source.Given() && req.PlanID != 0 { // a stored plan, on its own run
		db, err := c.Source.DB()
		if err != nil {
			return "", codedError(err)
		}
		err = withService(db, false, func(ctx context.Context, s *service.Service) error {
			got, err := s.SimulateRun(ctx, service.RunRef{}, req)
			if err != nil {
				return err
			}
			result, err = pipesimDocument(r, got.Result, got)
			return err
		})
		return result, err
	}
	err = withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		res, stored, err := service.SimulateInput(ctx, in, req)
		if err != nil {
			return err
		}
		result, err = pipesimDocument(r, res, stored)
		return err
	})
	return result, err
}
