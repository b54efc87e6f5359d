// Package cli is corpsim's command line: flags, output and exit codes
// around the application's use cases (package sim/app) and the server
// (package sim/server). main stays a few lines; tests call Main.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
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

// DefaultKeepEvents is --keep-events' default.
const DefaultKeepEvents = app.DefaultKeepEvents

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
	memProfile     string // --memprofile: write a heap profile at the command's end here
}

// Main runs corpsim with args (without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &cmdline{stdout: stdout, stderr: stderr}
	var profiling *os.File // the --cpuprofile file while the profile runs
	var heap *heapPeak     // the --memprofile sampler while the command runs
	root := &cobra.Command{
		Use:           "corpsim",
		Short:         "corpsim runs simulated companies that AI agents work inside",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			a.logger = hclog.New(&hclog.LoggerOptions{Name: "corpsim", Level: hclog.LevelFromString(a.logLevel), Output: a.stderr})
			if a.memProfile != "" {
				// Created now, so that a path it cannot write is said
				// before the command runs, not after.
				f, err := os.Create(a.memProfile)
				if err != nil {
					return err
				}
				heap = watchHeap(f)
			}
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
	root.PersistentFlags().StringVar(&a.memProfile, "memprofile", "", "write a heap profile to this file: what was held when the live heap was largest, and every allocation until then (read it with go tool pprof)")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.AddCommand(a.runCmd(), a.replayCmd(), a.logCmd(), a.sessionsCmd(), a.resumeCmd(), a.forkCmd(false), a.forkCmd(true), a.verifyCmd(), a.deleteCmd(), a.scoreCmd(), a.evalCmd(), a.serveCmd(), a.mcpCmd(), a.toolsCmd(), a.worldsCmd(),
		a.traceCmd(), a.diffCmd(), a.reportCmd(), a.exportCmd(), a.sweepCmd(), a.soakCmd(), a.diagnoseCmd(), a.creditCmd())
	root.SetFlagErrorFunc(flagError)
	usageArgs(root)
	ran, err := root.ExecuteContextC(ctx)
	err = cobraUsage(err)
	err = namedUsage(ran, err)
	if profiling != nil {
		pprof.StopCPUProfile()
		if cerr := profiling.Close(); err == nil {
			err = cerr
		}
	}
	if heap != nil {
		if perr := heap.write(); err == nil {
			err = perr
		}
	}
	if err == nil {
		return ExitOK
	}
	var list worlds.ErrorList
	if errors.As(err, &list) {
		// A world file's mistakes, one per line, each line beginning
		// with file:line:column as a compiler's do, for editors and tools.
		fmt.Fprintln(stderr, list.Error())
	} else {
		fmt.Fprintln(stderr, "corpsim:", err)
	}
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

// heapPeak keeps the heap profile of the moment the live heap was largest
// (within a tenth), sampled every 50 ms while a command runs: the profile
// --memprofile writes. A profile at the command's end would show nothing,
// since the session's state is gone by then.
type heapPeak struct {
	out  *os.File // where write puts it
	stop chan struct{}
	done chan struct{}
	prof bytes.Buffer
	err  error
}

func watchHeap(out *os.File) *heapPeak {
	h := &heapPeak{out: out, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var kept uint64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > kept+kept/10 {
				kept = live
				h.prof.Reset()
				h.err = pprof.Lookup("heap").WriteTo(&h.prof, 0)
			}
		}
	}()
	return h
}

// write stops the sampling and writes the kept profile to its file.
func (h *heapPeak) write() error {
	close(h.stop)
	<-h.done
	err := h.err
	if err == nil && h.prof.Len() == 0 { // a command shorter than one sample
		err = pprof.Lookup("heap").WriteTo(&h.prof, 0)
	}
	if err == nil {
		_, err = h.out.Write(h.prof.Bytes())
	}
	if cerr := h.out.Close(); err == nil {
		err = cerr
	}
	return err
}

func isUsage(err error) bool { return app.IsUsage(err) }

// flagError makes a usage error (exit 2) of a flag that does not parse,
// in one line that names the flag, the value and what it should be.
func flagError(c *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		f := bad.GetFlag()
		return usagef("%s--%s %q is not %s (see %s --help)", cmdPrefix(c), f.Name, bad.GetValue(), valueKind(f.Value.Type()), c.CommandPath())
	}
	return usagef("%s%v (see %s --help)", cmdPrefix(c), err, c.CommandPath())
}

// cmdPrefix is "run: " for corpsim run ("" for corpsim itself): the start
// of a message about the command, after Main's "corpsim: ".
func cmdPrefix(c *cobra.Command) string {
	if p := strings.TrimPrefix(c.CommandPath(), c.Root().Name()); p != "" {
		return strings.TrimSpace(p) + ": "
	}
	return ""
}

// namedUsage begins a usage error of a subcommand with the command's name,
// if its message does not already: "corpsim: report: -o FILE is required",
// not "corpsim: -o FILE is required", which left a script's author to
// guess which of its commands was meant.
func namedUsage(c *cobra.Command, err error) error {
	var ue *app.UsageError
	if c == nil || !errors.As(err, &ue) || ue.Err != nil {
		return err // not a usage error, or a refusal that names its own source
	}
	name := strings.TrimSuffix(cmdPrefix(c), ": ")
	if name == "" || strings.HasPrefix(ue.Msg, name+":") || strings.HasPrefix(ue.Msg, name+" ") {
		return err
	}
	return &app.UsageError{Msg: name + ": " + err.Error(), Err: err}
}

// valueKind describes what a flag of pflag type typ takes.
func valueKind(typ string) string {
	switch typ {
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "a whole number"
	case "float64", "float32":
		return "a number"
	case "duration":
		return "a duration (such as 90s, 15m or 2h)"
	case "bool":
		return "true or false"
	}
	return "a valid " + typ
}

// usageArgs makes the argument checks of c and its subcommands usage
// errors that show the command's usage line.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usagef("%s%v (usage: %s)", cmdPrefix(cmd), argsMessage(err), cmd.UseLine())
			}
			// Every argument names something (a session, a world): an
			// empty one (an unset shell variable) names nothing, and was
			// looked up as "no session  in DIR".
			for i, a := range args {
				if strings.TrimSpace(a) == "" {
					return usagef("%sargument %d is empty (usage: %s)", cmdPrefix(cmd), i+1, cmd.UseLine())
				}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// argsMessage rewords cobra's "accepts 1 arg(s), received 0".
func argsMessage(err error) string {
	msg := err.Error()
	var want, got int
	if n, _ := fmt.Sscanf(msg, "accepts %d arg(s), received %d", &want, &got); n == 2 {
		return fmt.Sprintf("takes %s, got %d", analyze.Plural(want, "argument"), got)
	}
	if n, _ := fmt.Sscanf(msg, "requires at least %d arg(s), only received %d", &want, &got); n == 2 {
		return fmt.Sprintf("takes at least %s, got %d", analyze.Plural(want, "argument"), got)
	}
	if n, _ := fmt.Sscanf(msg, "accepts at most %d arg(s), received %d", &want, &got); n == 2 {
		return fmt.Sprintf("takes at most %s, got %d", analyze.Plural(want, "argument"), got)
	}
	return msg
}

// cobraUsage makes usage errors (exit 2) of the errors cobra itself
// returns for an unknown command or a missing required flag, in one line.
func cobraUsage(err error) error {
	if err == nil || isUsage(err) {
		return err
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "unknown command"):
		first, rest, _ := strings.Cut(msg, "\n")
		first = strings.TrimSuffix(first, ` for "corpsim"`)
		if sugg := strings.Fields(strings.TrimPrefix(strings.TrimSpace(rest), "Did you mean this?")); len(sugg) > 0 {
			return usagef("%s (did you mean %s?); see corpsim --help", first, strings.Join(sugg, " or "))
		}
		return usagef("%s; see corpsim --help", first)
	case strings.HasPrefix(msg, "required flag"), strings.HasPrefix(msg, "if any flags in the group"):
		return usagef("%s", msg)
	}
	return err
}

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
