// Package cli is corpsim's command line: flags, output and exit codes
// around the application's use cases (package sim/app) and the server
// (package sim/server). main stays a few lines; tests call Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/app"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitError    = 1 // the command failed
	ExitUsage    = 2 // bad flags or arguments
	ExitMismatch = 3 // replay found a different state hash, or the store is damaged
)

// DefaultData is the data folder used when --data is not given.
const DefaultData = app.DefaultData

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

type cmdline struct {
	stdout, stderr io.Writer
	logLevel       string
	logger         hclog.Logger
	token          string // operator token given on the command line
	cpuProfile     string // --cpuprofile: write a CPU profile of the command here
}

// Main runs corpsim with args (without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &cmdline{stdout: stdout, stderr: stderr}
	var profiling *os.File // the --cpuprofile file while the profile runs
	root := &cobra.Command{
		Use:           "corpsim",
		Short:         "corpsim runs simulated companies that AI agents work inside",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			a.logger = hclog.New(&hclog.LoggerOptions{Name: "corpsim", Level: hclog.LevelFromString(a.logLevel), Output: a.stderr})
			if a.cpuProfile == "" {
				return nil
			}
			f, err := os.Create(a.cpuProfile)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return err
			}
			profiling = f
			return nil
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "warn", "log level on stderr: trace, debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (read it with go tool pprof)")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.AddCommand(a.runCmd(), a.replayCmd(), a.logCmd(), a.sessionsCmd(), a.resumeCmd(), a.forkCmd(false), a.forkCmd(true), a.verifyCmd(), a.scoreCmd(), a.evalCmd(), a.serveCmd(), a.toolsCmd(), a.worldsCmd(),
		a.traceCmd(), a.diffCmd(), a.reportCmd(), a.exportCmd(), a.sweepCmd(), a.soakCmd(), a.diagnoseCmd(), a.creditCmd())
	err := root.ExecuteContext(ctx)
	if profiling != nil {
		pprof.StopCPUProfile()
		if cerr := profiling.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "corpsim:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if isUsage(err) {
		return ExitUsage
	}
	if errors.Is(err, events.ErrCorrupt) || errors.Is(err, events.ErrLost) {
		return ExitMismatch // a damaged store is a session that does not verify
	}
	return ExitError
}

func isUsage(err error) bool { return app.IsUsage(err) }

var usagef = app.Usagef

// usage makes a usage error (exit 2) of a refusal, with its message.
func usage(err error) error { return &app.UsageError{Msg: err.Error(), Err: err} }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
