package planner

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
)

// Parallel is the family of the planners that rank parallel training strategies for a
// model on a cluster (issue 26): their results are rankings of strategies, not plans.
const Parallel Family = "parallel"

// ParallelFuncs are the functions of a parallel planner; an entry sets exactly one.
type ParallelFuncs struct {
	// Advise ranks ParaDL's strategies (paradl.Advise).
	Advise func(m *workload.Model, c *cluster.Cluster, o paradl.Options) (*paradl.Advice, error)
	// Search3D runs AMP's 3-D search (amp.Search).
	Search3D func(m *workload.Model, c *cluster.Cluster, o amp.Options) (*amp.Result, error)
}

// The parallel planners' names and result formats.
const (
	AlgoAdvise   = "advise"
	AlgoSearch3D = "search3d"
)

var (
	adviseEntry = Entry{Name: AlgoAdvise, Family: Parallel, Format: paradl.Format,
		Summary:  "rank data, spatial, layer, pipeline, filter, channel and hybrid parallelism (ParaDL's oracle, with rotor/pofo when memory is short)",
		Parallel: &ParallelFuncs{Advise: paradl.Advise}}
	search3dEntry = Entry{Name: AlgoSearch3D, Family: Parallel, Format: amp.Format,
		Summary:  "search pipeline, data and tensor degrees, micro-batch and cuts on a heterogeneous cluster (AMP, with a memory filter)",
		Parallel: &ParallelFuncs{Search3D: amp.Search}}
)

// parallelEntry returns the registry's entry of a parallel planner, or an error wrapping
// ErrUnsupported.
func parallelEntry(name string) (Entry, error) {
	e, ok := Lookup(name)
	if !ok || e.Parallel == nil {
		return Entry{}, fmt.Errorf("%w: no parallel planner %q in the registry", chainplan.ErrUnsupported, name)
	}
	return e, nil
}

// Advise ranks the parallel strategies of o for model m on cluster c through the
// registry's advise entry (paradl.Advise: errors and cost there).
func Advise(m *workload.Model, c *cluster.Cluster, o paradl.Options) (*paradl.Advice, error) {
	e, err := parallelEntry(AlgoAdvise)
	if err != nil {
		return nil, err
	}
	return e.Parallel.Advise(m, c, o)
}

// Search3D runs the 3-D search for model m on cluster c through the registry's search3d
// entry (amp.Search: errors and cost there).
func Search3D(m *workload.Model, c *cluster.Cluster, o amp.Options) (*amp.Result, error) {
	e, err := parallelEntry(AlgoSearch3D)
	if err != nil {
		return nil, err
	}
	return e.Parallel.Search3D(m, c, o)
}
