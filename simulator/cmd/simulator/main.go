// Command simulator runs archgate's scale scenarios against a real
// kube-apiserver and etcd, the real kube-scheduler and the operator's real
// code, writes reports and compares them across commits.
//
//	simulator run --scenario scenarios/10k-pods.yaml [--out reports] [--baseline] [--kubeconfig FILE] [--quiet]
//	simulator validate scenarios/*.yaml
//	simulator compare BASE.json HEAD.json
//	simulator compare --scenario 10k-pods --base main [--head REF]
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/simulator/internal/procs"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // expectations missed, run error, significant regression
	exitUsage       = 2 // bad flags or scenario file
	exitNotJudged   = 3 // only checks the machine could not judge failed: a pass saturated it, or its speed changed between passes
	exitInterrupted = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) == 2 && os.Args[1] == procs.GuardCommand {
		return procs.RunGuard(os.Stdin)
	}
	root := &cobra.Command{
		Use:           "simulator",
		Short:         "Run archgate scale scenarios and compare their reports",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newValidateCommand(), newCompareCommand(), newSchedulerCommand(), newBurnCommand(), newFamilyCommand(), newRepeatCommand(), newIndexCommand(),
		newCatalogCommand(), newCleanupCommand(), newFidelityCommand())
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "simulator:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}
