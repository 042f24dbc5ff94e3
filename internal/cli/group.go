package cli

import "github.com/spf13/cobra"

// groupCmd is a command that only gathers subcommands (chainplan advice, cluster, import):
// it takes no arguments, and run alone it prints its help.
func groupCmd(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}
