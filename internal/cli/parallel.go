package cli

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/cluster"
)

// parallelSource is what advise and search3d plan for: a chain file and the batch it was
// measured at, or a stored run, and a cluster file.
type parallelSource struct {
	chain, profile, run, cluster string
	batch, dtypeBytes            int64
}

func (f *parallelSource) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON); needs --batch")
	fl.Int64Var(&f.batch, "batch", 0, "the batch size the --chain file was measured at (chain files do not record it)")
	fl.Int64Var(&f.dtypeBytes, "dtype-bytes", 4, "bytes per element of the --chain file's tensors (δ)")
	fl.StringVar(&f.profile, "profile", "", "a profile file (chainplan.profile/v1 Arrow) instead of --chain, not stored")
	fl.StringVar(&f.run, "run", "", "a stored profile instead of --chain (a run id or \"latest\"); records the result")
	fl.StringVar(&f.cluster, "cluster", "", "cluster description, YAML or JSON (docs/parallel.md)")
}

// load reads the cluster and the workload. With --run it opens the database and returns
// it (the caller closes it) so that the result can be recorded; with --chain it returns
// a nil service.
func (f *parallelSource) load(cmd *cobra.Command) (*service.Service, service.ParallelInput, error) {
	in := service.ParallelInput{Source: service.SourceCLI}
	switch {
	case f.cluster == "":
		return nil, in, usagef("--cluster is required: a cluster description (YAML or JSON; examples/clusters/)")
	case f.chain == "" && f.run == "" && f.profile == "":
		return nil, in, usagef("--chain FILE --batch N, --profile FILE or --run RUN is required")
	case (f.chain != "") && (f.run != "" || f.profile != "") || (f.run != "" && f.profile != ""):
		return nil, in, usagef("--chain, --profile and --run are mutually exclusive")
	case f.chain == "" && cmd.Flags().Changed("batch"):
		return nil, in, usagef("--batch applies to --chain only: a profile records its batch")
	case f.dtypeBytes < 1 || f.dtypeBytes > 16:
		return nil, in, usagef("--dtype-bytes must be 1..16 (got %d)", f.dtypeBytes)
	}
	c, err := cluster.ReadFile(f.cluster)
	if err != nil {
		return nil, in, err
	}
	in.Cluster = c
	if f.chain != "" {
		ch, err := chainplan.ReadChain(f.chain)
		if err != nil {
			return nil, in, err
		}
		name := strings.TrimSuffix(filepath.Base(f.chain), filepath.Ext(f.chain))
		if in.Model, err = service.ChainWorkload(ch, name, f.batch, f.dtypeBytes); err != nil {
			return nil, in, fmt.Errorf("--batch: %w", err)
		}
		return nil, in, nil
	}
	if f.profile != "" {
		in.Model, err = service.FileWorkload(f.profile)
		return nil, in, err
	}
	svc, ref, err := openRunStore(cmd, f.run)
	if err != nil {
		return nil, in, err
	}
	if in.Model, in.RunID, err = svc.RunWorkload(cmd.Context(), ref); err != nil {
		svc.Close()
		return nil, in, err
	}
	return svc, in, nil
}

// plan loads the source, runs fn on it (svc is the database a --run opened, nil otherwise)
// and says on standard error where a stored run's result was recorded.
func (f *parallelSource) plan(cmd *cobra.Command, e *env,
	fn func(svc *service.Service, in service.ParallelInput) (*service.Advised, error)) (*service.Advised, service.ParallelInput, error) {
	svc, in, err := f.load(cmd)
	if err != nil {
		return nil, in, err
	}
	if svc != nil {
		defer svc.Close()
	}
	got, err := fn(svc, in)
	if err != nil {
		return nil, in, err
	}
	if got.AdviceID > 0 {
		fmt.Fprintf(e.stderr, "chainplan: recorded as advice %d of run %d in %s (chainplan advice record %d ... to add a measured run)\n",
			got.AdviceID, in.RunID, svc.Path(), got.AdviceID)
	}
	return got, in, nil
}

// parseDevices reads --devices: "4..1024" (the powers of two in the range), a list
// "4,8,16", one count, or "" for the planner's default (1, 2, 4, ... up to the cluster).
func parseDevices(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || a < 1 || b < a {
			return nil, usagef("--devices %q: want a range LO..HI of device counts with 1 ≤ LO ≤ HI, e.g. 4..1024", s)
		}
		var out []int
		for p := 1; p <= b; p *= 2 {
			if p >= a {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil, usagef("--devices %q: no power of two in the range", s)
		}
		return out, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || p < 1 {
			return nil, usagef("--devices %q: %q is not a device count ≥ 1 (want 4..1024, 4,8,16 or 64)", s, part)
		}
		out = append(out, p)
	}
	return out, nil
}

// savePicture draws a figure to path (.svg or .png) and says so on standard error.
func savePicture(e *env, path string, draw func() (*plot.Figure, error)) error {
	fig, err := draw()
	if err != nil {
		return err
	}
	if err := fig.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", path)
	return nil
}
