package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/report"
	"github.com/chainplan/chainplan/internal/service"
)

func newReportCmd(e *env) *cobra.Command {
	var output, bandwidth string
	var maxTimelines int
	cmd := &cobra.Command{
		Use:   "report RUN -o FILE.html",
		Short: "Write one self-contained HTML page about a stored run",
		Long: `Write one HTML page about a stored run (its id, or latest): its provenance, its stage
table, the budget-versus-time frontier, the picture of each stored plan (its memory
timeline, or a pipeline plan's schedule) and the predicted-against-measured history of the
plans that ran. With more plans than --max-timelines, the plans that ran are drawn first,
then the newest; the others are listed with the command that draws them. The pictures are inline SVG and
the style inline CSS: the page loads nothing and can be mailed or archived as it is.`,
		Example: `  chainplan report latest -o report.html
  chainplan report 3 --bandwidth 12GB/s -o run3.html`,
		Args: exactlyOneArg("report", "RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return usagef("-o FILE.html is required")
			}
			if ext := strings.ToLower(filepath.Ext(output)); ext != ".html" && ext != ".htm" {
				return usagef("-o %q: the report is an HTML page; name a .html file", output)
			}
			if maxTimelines < 1 {
				return usagef("--max-timelines must be at least 1 (got %d)", maxTimelines)
			}
			opts := report.Options{MaxTimelines: maxTimelines, Version: Version}
			if bandwidth != "" {
				bw, err := chainplan.ParseBandwidth(bandwidth)
				if err != nil || !(bw > 0) {
					return usagef("--bandwidth %q: want a positive number of bytes per second, such as 12GB/s", bandwidth)
				}
				opts.BandwidthBytesPerS = bw
			}
			return withRun(cmd, args[0], func(ctx context.Context, svc *service.Service, id int64) error {
				page, err := report.Build(ctx, svc, id, opts)
				if err != nil {
					return err
				}
				var b bytes.Buffer
				if err := page.Write(&b); err != nil {
					return err
				}
				if err := os.WriteFile(output, b.Bytes(), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "wrote %s (run %d, %d plans)\n", output, id, len(page.Plans))
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "the page to write (.html)")
	cmd.Flags().StringVar(&bandwidth, "bandwidth", "", "GPU-host bandwidth: adds pofo and offload-only to the frontier")
	cmd.Flags().IntVar(&maxTimelines, "max-timelines", report.DefaultMaxTimelines, "plans drawn (those that ran first, then the newest)")
	return cmd
}
