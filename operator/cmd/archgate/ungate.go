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

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/tools/ungate"
)

// newUngateCmd returns `archgate ungate`: the emergency release of gated pods.
func newUngateCmd(g *globalFlags) *cobra.Command {
	var (
		opts     podplacement.ReleaseOptions
		dryRun   string
		all      bool
		selector string
		gate     string
	)
	cmd := &cobra.Command{
		Use:   "ungate (--namespace NAMESPACE | --all-namespaces) [--selector SELECTOR] [--gate all|cluster|local] [--dry-run=none|client|server]",
		Short: "Remove archgate's scheduling gate from gated pods, leaving their affinity unchanged (emergency)",
		Long: `Remove archgate's scheduling gate (` + "multiarch.openshift.io/scheduling-gate" + `) from the pods that still carry it,
so that the scheduler places them. Their node affinity is left as it is; they are labelled
multiarch.openshift.io/placement=released. With local placement (spec.localPlacement) pods may
also carry multiarch.openshift.io/local-scheduling-gate: --gate all (the default) releases that
gate first, then archgate's; --gate local or --gate cluster only one. Use it when the pod placement controller is down for
good or archgate was removed without deleting the ClusterPodPlacementConfig first.

It is a dry run unless --dry-run=none: with client (the default) it prints the pods it would
release; with server the apiserver checks and admits every release without persisting it.
While archgate runs, new pods keep being gated: delete the ClusterPodPlacementConfig (which
releases every gated pod itself) or the MutatingWebhookConfiguration first.`,
		Example: `  archgate ungate --all-namespaces
  archgate ungate -n team-a -l app=web --dry-run=server
  archgate ungate -n team-a -l app=web --dry-run=none`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.DryRun, opts.ServerDryRun, err = parseDryRun(dryRun); err != nil {
				return err
			}
			if (opts.Namespace == "") == !all {
				return errors.New("choose the pods: --namespace NAMESPACE or --all-namespaces")
			}
			if selector != "" {
				sel, err := labels.Parse(selector)
				if err != nil {
					return err
				}
				opts.Selector = sel
			}
			locals, err := ungateGates(gate)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			for _, local := range locals {
				opts.Local = local
				if _, err := ungate.Run(cmd.Context(), c, opts, cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&opts.Namespace, "namespace", "n", "", "Release the gated pods of this namespace.")
	fs.BoolVarP(&all, "all-namespaces", "A", false, "Release the gated pods of every namespace.")
	fs.StringVarP(&selector, "selector", "l", "", "Only the pods matching this label selector (e.g. app=web).")
	fs.StringVar(&dryRun, "dry-run", "client", `"client": print what would be released; "server": also have the apiserver admit each release, persisting nothing; "none": release.`)
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.IntVar(&opts.Workers, "workers", podplacement.DefaultReleaseWorkers, "Pods released concurrently.")
	fs.StringVar(&gate, "gate", "all", "Which gate to remove: all (the local gate, then archgate's), cluster or local.")
	return cmd
}

// parseDryRun reads --dry-run as kubectl does: none, client or server, and its older boolean
// spellings (true is client, false is none).
func parseDryRun(v string) (client, server bool, err error) {
	switch v {
	case "client", "true":
		return true, false, nil
	case "server":
		return false, true, nil
	case "none", "false":
		return false, false, nil
	}
	return false, false, fmt.Errorf("--dry-run %q: want none, client or server", v)
}

// ungateGates turns --gate into the releases to run, as podplacement.ReleaseOptions.Local
// values: the local gate first, since the cluster-wide controller waits for it.
func ungateGates(gate string) ([]bool, error) {
	switch gate {
	case "all":
		return []bool{true, false}, nil
	case "cluster":
		return []bool{false}, nil
	case "local":
		return []bool{true}, nil
	}
	return nil, fmt.Errorf("--gate %q: want all, cluster or local", gate)
}
