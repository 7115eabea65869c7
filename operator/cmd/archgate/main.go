/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command archgate runs archgate's components: the scheduling-gate webhook, the pod placement
// controller and (in their own files) the operator and its tools. Each subcommand wires flags to
// the options of the public start-up package (pkg/components) and nothing else; the webhook's
// and the controller's flags are defined in internal/cmdline, which the operator renders their
// Deployments' args with.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

func main() { os.Exit(run()) }

// run executes the command line and returns the exit code; deferred cleanup runs before exit.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	// Installed as kubectl-archgate, kubectl runs it as a plugin: its help says so.
	if filepath.Base(os.Args[0]) == "kubectl-archgate" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl archgate"}
	}
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "archgate:", err)
		return 1
	}
	return 0
}
