package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/internal/service"
)

func newExportCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export RUN",
		Short: "Write a stored profile as a chain file (chainplan.chain/v1 JSON)",
		Long: `Write run RUN (a run id, or "latest") as a chainplan.chain/v1 chain: the medians of
its stages, the chain input a_0 (stage 1's input size) and the loss. The chain is what
chainplan solve --chain reads. A run whose saved or temporary sizes were not measured
(a chainplan.record profile) has no chain: the message names the stage and the field.

A run of towers joined at the loss (a CLIP-style dual encoder, a triplet network) is
written as a chainplan.multichain/v1 bundle: one chain per branch and the joint loss, what
chainplan solve --algo multichain --chain reads.`,
		Example: `  chainplan export 12 > resnet50.json
  chainplan export latest -o chain.json && chainplan solve --chain chain.json --budget 2GiB`,
		Args: oneRunArg("export"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRun(cmd, args[0], func(ctx context.Context, svc *service.Service, id int64) error {
				var doc interface{ MarshalIndent() ([]byte, error) }
				switch towers, err := svc.IsMultiChainRun(ctx, id); {
				case err != nil:
					return err
				case towers:
					doc, err = svc.RunMultiChain(ctx, id)
					if err != nil {
						return err
					}
				default:
					doc, err = svc.RunChain(ctx, id)
					if err != nil {
						return err
					}
				}
				b, err := doc.MarshalIndent()
				if err != nil {
					return err
				}
				return writeOutput(e, output, b)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	return cmd
}

// writeOutput writes b to the file output names, or to standard output when it is empty
// (export, import). A file that cannot be written is bad input.
func writeOutput(e *env, output string, b []byte) error {
	if output == "" {
		_, err := e.stdout.Write(b)
		return err
	}
	if err := os.WriteFile(output, b, 0o644); err != nil {
		return &usageError{err}
	}
	return nil
}
