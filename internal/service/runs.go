package service

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// RunRef names a stored run: by its id, or the newest one. The zero value names run 0,
// which never exists.
type RunRef struct {
	id     int64
	latest bool
}

// RunID refers to run id (Python passes run ids as integers). An id below 1 names no run:
// ResolveRun reports it as not found, as for any id the database does not hold.
func RunID(id int64) RunRef { return RunRef{id: id} }

// LatestRun refers to the newest run (by created_at, then run_id).
var LatestRun = RunRef{latest: true}

// ParseRunRef reads the CLI's RUN argument: a run id (a positive integer) or "latest".
// Anything else fails with an error wrapping ErrBadInput.
func ParseRunRef(s string) (RunRef, error) {
	if s == "latest" {
		return LatestRun, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return RunRef{}, &inputError{fmt.Sprintf(
			"RUN must be a run id (a positive integer, see chainplan profiles) or \"latest\", got %q", s)}
	}
	return RunID(id), nil
}

// String returns the reference as ParseRunRef reads it.
func (r RunRef) String() string {
	if r.latest {
		return "latest"
	}
	return strconv.FormatInt(r.id, 10)
}

// ResolveRun returns the id of the run ref names. A run that does not exist, or "latest"
// in a database without runs, fails with an error wrapping chainplan.ErrNotFound.
func (s *Service) ResolveRun(ctx context.Context, ref RunRef) (int64, error) {
	r, err := s.Run(ctx, ref)
	if err != nil {
		return 0, err
	}
	return r.ID, nil
}

// Run returns the provenance of the run ref names (model, device, dtype, input shape, ...)
// or an error wrapping chainplan.ErrNotFound.
func (s *Service) Run(ctx context.Context, ref RunRef) (*store.Run, error) {
	id := ref.id
	if ref.latest {
		var err error
		if id, err = s.db.LatestRunID(ctx); err != nil {
			return nil, err
		}
	}
	return s.db.Run(ctx, id)
}

// Runs returns the runs f selects, newest first.
func (s *Service) Runs(ctx context.Context, f store.RunFilter) ([]*store.Run, error) {
	return s.db.Runs(ctx, f)
}

// RunChain returns the chain of stored run runID: its stages' medians turned into a
// chainplan.chain/v1 chain by profile.ChainOf, as for a profile file. A run whose memory
// sizes were not measured (a chainplan.record profile) fails with a *chainplan.ChainError
// naming the stage and the field.
func (s *Service) RunChain(ctx context.Context, runID int64) (*chainplan.Chain, error) {
	r, err := s.db.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	if tw, err := r.Towers(); err != nil || tw != nil {
		if err == nil {
			err = fmt.Errorf("%w: run %d profiles %d inputs through towers joined at the loss, not one chain: plan it "+
				"with --algo %s (chainplan frontier --run %d gives their frontier)", chainplan.ErrUnsupported, runID,
				len(tw.Branches), strings.Join(planner.MultichainAlgos(), " or "), runID)
		}
		return nil, err
	}
	stages, err := s.db.Stages(ctx, runID)
	if err != nil {
		return nil, err
	}
	c, err := profile.ChainOf(stages)
	if err != nil {
		return nil, fmt.Errorf("chain of run %d: %w", runID, err)
	}
	return c, nil
}

// RunMultiChain returns the bundle of stored run runID, a profile of towers joined at the
// loss (profile.Towers): the stages of each tower turned into a chain, one per branch, by
// profile.MultiChainOf. A run of one chain fails with an error wrapping
// chainplan.ErrUnsupported that says so; a run whose sizes were not measured with a
// *chainplan.ChainError naming the stage and the field.
func (s *Service) RunMultiChain(ctx context.Context, runID int64) (*chainplan.MultiChain, error) {
	r, err := s.db.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	tw, err := r.Towers()
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", runID, err)
	}
	if tw == nil {
		return nil, fmt.Errorf("%w: run %d profiles one chain, not towers joined at the loss: plan it with a "+
			"single-chain algorithm (rotor, ...)", chainplan.ErrUnsupported, runID)
	}
	stages, err := s.db.Stages(ctx, runID)
	if err != nil {
		return nil, err
	}
	mc, err := profile.MultiChainOf(stages, tw)
	if err != nil {
		return nil, fmt.Errorf("towers of run %d: %w", runID, err)
	}
	return mc, nil
}

// IsMultiChainRun reports whether run runID profiles towers joined at the loss.
func (s *Service) IsMultiChainRun(ctx context.Context, runID int64) (bool, error) {
	r, err := s.db.Run(ctx, runID)
	if err != nil {
		return false, err
	}
	tw, err := r.Towers()
	return tw != nil, err
}

// runChain resolves ref and returns the run's id and its chain, what PlanRun and
// PlanPipelineRun plan. Errors as ResolveRun's and RunChain's.
func (s *Service) runChain(ctx context.Context, ref RunRef) (int64, *chainplan.Chain, error) {
	id, err := s.ResolveRun(ctx, ref)
	if err != nil {
		return 0, nil, err
	}
	c, err := s.RunChain(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	return id, c, nil
}
