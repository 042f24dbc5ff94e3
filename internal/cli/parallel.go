package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/cluster"
)

// parallelSource is what advise and search3d plan for: a chain file and the batch it was
// measured at, or a stored run, and a cluster file.
type parallelSource struct {
	chain, profile, run, cluster string
	batch, dtypeBytes            int64
	nominalLinks                 bool
}

func (f *parallelSource) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON); needs --batch")
	fl.Int64Var(&f.batch, "batch", 0, "the batch size the --chain file was measured at (chain files do not record it)")
	fl.Int64Var(&f.dtypeBytes, "dtype-bytes", 4, "bytes per element of the --chain file's tensors (δ)")
	fl.StringVar(&f.profile, "profile", "", "a profile file (chainplan.profile/v1 Arrow) instead of --chain, not stored")
	fl.StringVar(&f.run, "run", "", "a stored profile instead of --chain (a run id or \"latest\"); records the result")
	fl.StringVar(&f.cluster, "cluster", "", "cluster description, YAML or JSON (docs/parallel.md)")
	fl.BoolVar(&f.nominalLinks, "nominal-links", false, "plan on the cluster file's bandwidths even where the store holds measured ones for the --run")
}

// load reads the cluster and the workload. With --run it opens the database and returns
// it (the caller closes it) so that the result can be recorded; with --chain it returns
// a nil service.
func (f *parallelSource) load(cmd *cobra.Command) (*service.Service, service.ParallelInput, error) {
	in := service.ParallelInput{Source: service.SourceCLI, NominalLinks: f.nominalLinks}
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
	svc, input, err := resolveSource(cmd, f.run, service.Source{ChainPath: f.chain, ProfilePath: f.profile})
	if err != nil {
		return nil, in, err
	}
	if in.Model, err = service.WorkloadOf(cmd.Context(), input, f.batch, f.dtypeBytes, "--batch"); err != nil {
		if svc != nil {
			svc.Close()
		}
		return nil, in, err
	}
	in.RunID = input.RunID
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

// deviceCounts is what --devices asked for: the counts, and the text and largest count
// of a range, which the cluster bounds.
type deviceCounts struct {
	counts  []int  // nil: the planner's default, 1, 2, 4, ... up to the cluster
	text    string // the flag as given
	hi      int    // the largest count asked for (a range's HI)
	isRange bool
}

// parseDevices reads --devices: "4..1024" (the powers of two in the range), a list
// "4,8,16", one count, or "" for the planner's default (1, 2, 4, ... up to the cluster).
func parseDevices(s string) (deviceCounts, error) {
	s = strings.TrimSpace(s)
	d := deviceCounts{text: s}
	if s == "" || s == "all" {
		return d, nil
	}
	count := func(part string) (int, error) {
		p, err := strconv.Atoi(strings.TrimSpace(part))
		if errors.Is(err, strconv.ErrRange) {
			return 0, usagef("--devices %q: %s devices is more than any cluster holds", s, strings.TrimSpace(part))
		}
		if err != nil || p < 1 {
			return 0, usagef("--devices %q: %q is not a device count ≥ 1 (want 4..1024, 4,8,16 or 64)", s, strings.TrimSpace(part))
		}
		return p, nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err := count(lo)
		if err != nil {
			return d, err
		}
		b, err := count(hi)
		if err != nil {
			return d, err
		}
		if b < a {
			return d, usagef("--devices %q: want a range LO..HI of device counts with 1 ≤ LO ≤ HI, e.g. 4..1024", s)
		}
		for p := 1; p > 0 && p <= b; p *= 2 { // p > 0: doubling past the largest int wraps
			if p >= a {
				d.counts = append(d.counts, p)
			}
		}
		if len(d.counts) == 0 {
			return d, usagef("--devices %q: no power of two in the range", s)
		}
		d.hi, d.isRange = b, true
		return d, nil
	}
	for _, part := range strings.Split(s, ",") {
		p, err := count(part)
		if err != nil {
			return d, err
		}
		d.counts = append(d.counts, p)
		d.hi = max(d.hi, p)
	}
	return d, nil
}

// within refuses counts beyond the n devices of the cluster (named by its file), naming
// the range or the count given and the limit.
func (d deviceCounts) within(n int, cluster string) error {
	switch {
	case d.hi <= n:
		return nil
	case d.isRange:
		return usagef("--devices %s: the range goes up to %d devices, beyond the %d of the cluster %s: give a range "+
			"within 1..%d, such as %s..%d", d.text, d.hi, n, cluster, n, strings.TrimSpace(strings.Split(d.text, "..")[0]), n)
	}
	return usagef("--devices %s: %d devices is beyond the %d of the cluster %s", d.text, d.hi, n, cluster)
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
