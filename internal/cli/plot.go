package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/store"
)

// plotFlags are the flags of the plot subcommands; each reads those it documents.
type plotFlags struct {
	output, chain, plan, planID, run, model, bandwidth string
	slots                                              int64
	budgets, periods                                   int
	overhead                                           bool
	towers                                             towerFlags // plot frontier's --chain, --loss, --keep-input-grad
}

func newPlotCmd(e *env) *cobra.Command {
	var f plotFlags
	cmd := &cobra.Command{
		Use:   "plot",
		Short: "Draw the frontier, a plan's memory timeline, a pipeline schedule or the history (SVG or PNG)",
		Long: `Draw a picture to the file -o names; its extension, .svg or .png, picks the format.

  frontier   makespan against budget: rotor, revolve, checkpoint_sequential at each segment
             count, store-all; with --bandwidth also pofo and offload-only; a plan marked;
             for towers joined at the loss (several --chain, --loss, or a bundle): multichain,
             multichain-linear, per-block checkpointing and store-all
  timeline   a plan's simulated memory over time with its operations, the budget, the peak
             and, for a stored plan that ran, the measured peak
  pipeline   a chainplan.pipeline/v1 plan over a few periods: a lane per device and link,
             each device's memory (and, for a stored plan that ran, the peak each rank measured)
  history    predicted against measured peak and step time of the stored plans that ran`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	sub := func(use, short, example string, run func(*cobra.Command) (*plot.Figure, error)) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Example: example, Args: noArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				if f.output == "" {
					return usagef("-o FILE.svg or FILE.png is required")
				}
				if _, err := plot.FormatOf(f.output); err != nil {
					return err
				}
				fig, err := run(c)
				if err != nil {
					return err
				}
				if err := fig.Save(f.output); err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "wrote %s\n", f.output)
				return nil
			}}
		c.Flags().StringVarP(&f.output, "output", "o", "", "output file: .svg or .png")
		return c
	}
	frontier := sub("frontier", "Makespan against budget for every checkpointing algorithm",
		`  chainplan plot frontier --chain examples/resnet50.json -o frontier.svg
  chainplan plot frontier --run latest --bandwidth 12GB/s --plan-id 4 -o frontier.png
  chainplan plot frontier --chain image.json --chain text.json --loss loss.json -o towers.svg`,
		func(c *cobra.Command) (*plot.Figure, error) { return plotFrontier(c, &f) })
	fl := frontier.Flags()
	fl.StringArrayVar(&f.towers.chains, "chain", nil, "chain file (chainplan.chain/v1 JSON); towers joined at the loss: one per tower, or a bundle")
	fl.StringVar(&f.towers.loss, "loss", "", "the joint loss of the towers")
	fl.BoolSliceVar(&f.towers.keep, "keep-input-grad", nil, "per tower, keep the gradient of its input")
	fl.StringVar(&f.run, "run", "", "a stored run (its id, or latest) instead of --chain")
	fl.StringVar(&f.plan, "plan", "", "a plan file to mark on the frontier")
	fl.StringVar(&f.planID, "plan-id", "", "a stored plan to mark (its run's chain when no --chain or --run)")
	fl.StringVar(&f.bandwidth, "bandwidth", "", "GPU-host bandwidth: adds pofo and offload-only (bytes per second, or 12GB/s)")
	fl.IntVar(&f.budgets, "budgets", plot.DefaultOffloadBudgets, "budgets at which each offloading algorithm is solved")
	fl.Int64Var(&f.slots, "slots", 500, "memory slots of the rotor and revolve frontiers")
	fl.BoolVar(&f.overhead, "overhead", false, "draw the overhead over no recomputation instead of the makespan")

	timeline := sub("timeline", "A plan's memory over time, with its operations",
		`  chainplan solve --chain examples/resnet50.json --budget 4GiB --format json > plan.json
  chainplan plot timeline --chain examples/resnet50.json --plan plan.json -o timeline.svg
  chainplan plot timeline --plan-id 4 -o timeline.png`,
		func(c *cobra.Command) (*plot.Figure, error) { return plotTimeline(c, &f) })
	timeline.Flags().StringVar(&f.chain, "chain", "", "chain file of the plan")
	timeline.Flags().StringVar(&f.plan, "plan", "", "plan file (chainplan solve --format json)")
	timeline.Flags().StringVar(&f.planID, "plan-id", "", "a stored plan, on its run's chain (instead of --chain and --plan)")

	pipeline := sub("pipeline", "A pipeline plan's schedule: a lane per device and link",
		`  chainplan plot pipeline --plan pipeline.json --periods 4 -o pipeline.svg
  chainplan plot pipeline --plan-id 3 -o pipeline.png   # a stored plan, with its measured peaks`,
		func(c *cobra.Command) (*plot.Figure, error) { return plotPipeline(c, &f) })
	pipeline.Flags().StringVar(&f.plan, "plan", "", "pipeline plan file (chainplan.pipeline/v1 JSON)")
	pipeline.Flags().StringVar(&f.planID, "plan-id", "", "a stored pipeline plan (chainplan pipeline --run), with its run's device and measured peaks")
	pipeline.Flags().IntVar(&f.periods, "periods", plot.DefaultPeriods, "periods of the steady state to draw")

	history := sub("history", "Predicted against measured peak and time of stored plans",
		`  chainplan plot history --run latest -o history.svg
  chainplan plot history --model resnet50 -o history.png`,
		func(c *cobra.Command) (*plot.Figure, error) { return plotHistory(c, &f) })
	history.Flags().StringVar(&f.run, "run", "", "the plans of a stored run (its id, or latest)")
	history.Flags().StringVar(&f.model, "model", "", "the plans of every run of a model (instead of --run)")

	cmd.AddCommand(frontier, timeline, pipeline, history)
	return cmd
}

// withStore opens the database, runs fn and closes it.
func withStore[T any](cmd *cobra.Command, fn func(ctx context.Context, svc *service.Service) (T, error)) (T, error) {
	var zero T
	svc, err := openStore(cmd)
	if err != nil {
		return zero, err
	}
	defer svc.Close()
	return fn(cmd.Context(), svc)
}

// parsePlanID reads --plan-id.
func parsePlanID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("--plan-id must be a plan id (a positive integer, see chainplan show-plan), got %q", s)
	}
	return id, nil
}

func plotFrontier(cmd *cobra.Command, f *plotFlags) (*plot.Figure, error) {
	// The --chain files (a chain, a bundle, towers with --loss) are read through the source
	// envelope, once.
	files := f.towers.source(false)
	var in *service.Input
	if files.Given() {
		if f.run != "" {
			return nil, usagef("give --chain or --run, not both")
		}
		var err error
		if in, err = service.Resolve(cmd.Context(), nil, files); err != nil {
			return nil, err
		}
	}
	if towers, err := towersFrontier(cmd, f, in); towers || err != nil {
		return towersFrontierFigure(cmd, f, in, err)
	}
	if len(f.towers.chains) == 1 {
		f.chain = f.towers.chains[0]
	}
	if f.chain != "" && f.run != "" {
		return nil, usagef("give --chain or --run, not both")
	}
	if f.chain == "" && f.run == "" && f.planID == "" {
		return nil, usagef("--chain or --run is required (or --plan-id: the frontier of its run)")
	}
	if f.plan != "" && f.planID != "" {
		return nil, usagef("give --plan or --plan-id, not both")
	}
	if f.slots <= 0 || f.budgets <= 0 {
		return nil, usagef("--slots and --budgets must be positive (got %d and %d)", f.slots, f.budgets)
	}
	opts := plot.FrontierOptions{Slots: f.slots, Budgets: f.budgets, Overhead: f.overhead}
	if f.bandwidth != "" {
		bw, err := chainplan.ParseBandwidth(f.bandwidth)
		if err != nil || !(bw > 0) {
			return nil, usagef("--bandwidth %q: want a positive number of bytes per second, such as 12GB/s", f.bandwidth)
		}
		opts.BandwidthBytesPerS = bw
	}
	var c *chainplan.Chain
	var err error
	if in != nil {
		if c, err = in.ChainOf(cmd.Context()); err != nil {
			return nil, err
		}
		opts.Title = "Budget versus time: " + f.chain
	}
	if f.plan != "" {
		if opts.Chosen, err = readSchedulePlan(f.plan); err != nil {
			return nil, err
		}
	}
	if f.run != "" || f.planID != "" {
		c, err = withStore(cmd, func(ctx context.Context, svc *service.Service) (*chainplan.Chain, error) {
			if f.planID != "" {
				id, err := parsePlanID(f.planID)
				if err != nil {
					return nil, err
				}
				sp, pc, err := svc.StoredPlan(ctx, id)
				if err != nil {
					return nil, err
				}
				opts.Chosen = &sp.Plan
				if c == nil && f.run == "" {
					opts.Title = fmt.Sprintf("Budget versus time: run %d", sp.RunID)
					return pc, nil
				}
			}
			if f.run == "" {
				return c, nil
			}
			id, err := resolveRun(ctx, svc, f.run)
			if err != nil {
				return nil, err
			}
			opts.Title = fmt.Sprintf("Budget versus time: run %d", id)
			return svc.RunChain(ctx, id)
		})
		if err != nil {
			return nil, err
		}
	}
	d, err := plot.FrontierOf(c, opts)
	if err != nil {
		return nil, err
	}
	return plot.Frontier(d)
}

// readSchedulePlan reads a checkpointing or offloading plan file, telling a pipeline plan
// apart with a message that names the right picture.
func readSchedulePlan(path string) (*chainplan.Plan, error) {
	data, err := chainplan.ReadInput(path, "a plan file (JSON)")
	if err != nil {
		return nil, err
	}
	if pipeplan.IsPipelinePlan(data) {
		return nil, usagef("%s is a pipeline plan (chainplan.pipeline/v1): draw it with chainplan plot pipeline", path)
	}
	p, err := chainplan.ParsePlan(data)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return p, nil
}

func plotTimeline(cmd *cobra.Command, f *plotFlags) (*plot.Figure, error) {
	var d *plot.TimelineData
	switch {
	case f.planID != "":
		if f.chain != "" || f.plan != "" {
			return nil, usagef("--plan-id draws a stored plan on its run's chain: give it without --chain and --plan")
		}
		id, err := parsePlanID(f.planID)
		if err != nil {
			return nil, err
		}
		if d, err = withStore(cmd, func(ctx context.Context, svc *service.Service) (*plot.TimelineData, error) {
			return svc.PlanTimeline(ctx, id)
		}); err != nil {
			return nil, err
		}
	case f.chain == "" || f.plan == "":
		return nil, usagef("--chain and --plan are required (or --plan-id for a stored plan)")
	default:
		p, err := readSchedulePlan(f.plan)
		if err != nil {
			return nil, err
		}
		in, err := service.Resolve(cmd.Context(), nil, service.Source{ChainPath: f.chain})
		if err != nil {
			return nil, err
		}
		if in.MultiChain != nil {
			d, err = plot.MultichainTimelineOf(in.MultiChain, p, 0)
		} else {
			d, err = plot.TimelineOf(in.Chain, p, 0)
		}
		if err != nil {
			return nil, err
		}
	}
	return plot.Timeline(d)
}

func plotPipeline(cmd *cobra.Command, f *plotFlags) (*plot.Figure, error) {
	if f.periods < 1 {
		return nil, usagef("--periods must be at least 1 (got %d)", f.periods)
	}
	switch {
	case f.plan != "" && f.planID != "":
		return nil, usagef("give --plan or --plan-id, not both")
	case f.planID != "":
		id, err := parsePlanID(f.planID)
		if err != nil {
			return nil, err
		}
		d, err := withStore(cmd, func(ctx context.Context, svc *service.Service) (*plot.PipelineData, error) {
			return svc.PipelinePicture(ctx, id, f.periods)
		})
		if err != nil {
			return nil, err
		}
		return plot.Pipeline(d)
	case f.plan == "":
		return nil, usagef("--plan is required (a chainplan.pipeline/v1 plan file), or --plan-id for a stored plan")
	}
	data, err := chainplan.ReadInput(f.plan, "a pipeline plan ("+pipeplan.Format+" JSON)")
	if err != nil {
		return nil, err
	}
	if !pipeplan.IsPipelinePlan(data) {
		return nil, usagef("%s is no pipeline plan (its format is not %s): a checkpointing or offloading plan "+
			"has no Gantt chart; draw it with chainplan plot timeline", f.plan, pipeplan.Format)
	}
	p, err := pipeplan.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.plan, err)
	}
	d, err := plot.PipelineOf(p, f.periods)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.plan, err)
	}
	return plot.Pipeline(d)
}

func plotHistory(cmd *cobra.Command, f *plotFlags) (*plot.Figure, error) {
	if (f.run == "") == (f.model == "") {
		return nil, usagef("give one of --run RUN and --model NAME")
	}
	d, err := withStore(cmd, func(ctx context.Context, svc *service.Service) (*plot.HistoryData, error) {
		if f.model != "" {
			return svc.History(ctx, store.OutcomeFilter{ModelName: f.model}, "model "+f.model)
		}
		id, err := resolveRun(ctx, svc, f.run)
		if err != nil {
			return nil, err
		}
		return svc.History(ctx, store.OutcomeFilter{RunID: id}, fmt.Sprintf("run %d", id))
	})
	if err != nil {
		return nil, err
	}
	return plot.History(d)
}
