package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1
	exitScoreBelow  = 2   // a run scored below --fail-under
	exitInterrupted = 130 // SIGINT (Ctrl-C)
	exitTerminated  = 143 // SIGTERM
)

// interrupted is the cancellation cause of a signal; its message is what
// cancelled task instances record.
type interrupted struct {
	code int
	msg  string
}

func (e *interrupted) Error() string { return e.msg }

func interruptFor(s os.Signal) error {
	if s == syscall.SIGTERM {
		return &interrupted{code: exitTerminated, msg: "cancelled by SIGTERM"}
	}
	return &interrupted{code: exitInterrupted, msg: "cancelled by Ctrl-C"}
}

func exitCodeFor(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupted
}

// errSilent is returned by commands that already printed their outcome
// and only need a non-zero exit.
var errSilent = errors.New("failed")

// execute runs the CLI and returns the process exit code. Errors print
// as one "Error: ..." line on stderr.
func execute(ctx context.Context, args []string, d *deps) int {
	root := newRootCmd(d)
	root.SetArgs(args)
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	err := root.ExecuteContext(ctx)
	d.closeProcessPlugins() // no plugin process outlives the command (processplugins.go)
	return report(ctx, err, d.stderr)
}

func report(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var intr *interrupted
	if errors.As(err, &intr) {
		return intr.code
	}
	if cause := context.Cause(ctx); errors.As(cause, &intr) {
		return intr.code
	}
	var below *scoreBelowError
	if errors.As(err, &below) {
		fmt.Fprintf(stderr, "Error: %s\n", below)
		return exitScoreBelow
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintf(stderr, "Error: %s\n", oneLine(err.Error()))
	}
	return exitError
}

// oneLine folds a multi-line error message (joined errors, driver errors)
// onto one line.
func oneLine(msg string) string {
	lines := strings.Split(msg, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
