package lensctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitOK        = 0 // done; a watched task completed, a watched run or workflow succeeded (and met its SLA)
	ExitFailed    = 1 // an API or transport error, or a watched task, run or workflow failed
	ExitUsage     = 2 // bad flags or arguments
	ExitCancelled = 3 // a watched task, run or workflow was cancelled (or deleted)
	ExitSLAMissed = 4 // a watched run or workflow succeeded but missed its SLA; an evaluation's guide missed its SLA
)

// usageError marks an error in how lensctl was called.
type usageError struct{ error }

// exitError ends a command with a code and a message (a task that failed, say).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// app is what every command shares.
type app struct {
	in          io.Reader
	out, errOut io.Writer
	getenv      func(string) string
	api, token  string
	config      string
	output      string
	client      *Client
	printer     printer
	noProgress  bool
}

// Main runs lensctl with args and returns its exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer, getenv func(string) string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a := &app{in: in, out: out, errOut: errOut, getenv: getenv}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(errOut, ee.msg)
		}
		return ee.code
	case errors.As(err, &ue) || isCobraUsage(err):
		fmt.Fprintf(errOut, "usage error: %v\nRun 'lensctl --help' for usage.\n", err)
		return ExitUsage
	}
	fmt.Fprintf(errOut, "error: %v\n", redact(err, a.token))
	return ExitFailed
}

// isCobraUsage recognises cobra's own argument and flag errors, which it returns as plain errors.
func isCobraUsage(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

type flagError struct{ error }

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "lensctl",
		Short:         "Command-line client of the Lensfn APIs",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.printer = printer{format: a.output, out: a.out}
			if err := a.printer.validate(); err != nil {
				return err
			}
			s, err := resolve(a.api, a.token, a.config, a.getenv)
			if err != nil {
				return usageError{err}
			}
			a.token = s.token
			if a.client, err = newClient(s.api, s.token); err != nil {
				return usageError{err}
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	f := root.PersistentFlags()
	f.StringVar(&a.api, "api", "", "API base URL (env LENS_API, config file api; default "+DefaultAPI+")")
	f.StringVar(&a.token, "token", "", "bearer token (env LENS_TOKEN, config file token)")
	f.StringVar(&a.config, "config", "", "config file (default ~/.config/lensfn/config.yaml)")
	f.StringVarP(&a.output, "output", "o", "table", "output format: table, json or yaml")
	f.BoolVar(&a.noProgress, "no-progress", false, "no progress bars")
	root.AddCommand(a.datasetsCmd(), a.tasksCmd(), a.evalCmd(), a.compareCmd(), a.backendsCmd(), a.scenariosCmd(), a.discoverCmd(), a.predictCmd())
	return root
}

// args wraps cobra's positional argument checks as usage errors.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// group is a command that only holds subcommands; an unknown subcommand is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("%s needs a subcommand", cmd.CommandPath())}
		}}
	c.AddCommand(subs...)
	return c
}
