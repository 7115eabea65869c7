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
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/tools/explain"
)

// newExplainCmd returns `archgate explain`: what archgate did to one pod and why.
func newExplainCmd(g *globalFlags) *cobra.Command {
	var (
		opts        explain.Options
		noInspect   bool
		inspectOpts inspect.Options
	)
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/POD",
		Short: "Explain what archgate did to a pod: images and their architectures, the affinity it set, its labels and why",
		Long: `Explain what archgate did to a pod and why: whether its namespace is selected, the webhook's
decision, each image and the architectures it supports (inspected now, from this machine, with the
pod's pull secrets and the global pull secret when readable), the node affinity on
kubernetes.io/arch, the labels and annotations archgate wrote, the PodPlacementConfigs that apply,
the node the pod landed on and the Events about it.`,
		Example: `  archgate explain team-a/web-7d9f-abcde
  archgate explain team-a/web-7d9f-abcde --no-inspect`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok || ns == "" || name == "" {
				return fmt.Errorf("%q: want NAMESPACE/POD", args[0])
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if !noInspect {
				inspectOpts.Timeout = opts.Timeout
				registry, err := inspect.NewRegistryInspector(inspectOpts)
				if err != nil {
					return fmt.Errorf("configuring image inspection: %w", err)
				}
				opts.Inspector = registry
			}
			facts, err := explain.Gather(cmd.Context(), c, types.NamespacedName{Namespace: ns, Name: name}, opts)
			if err != nil {
				return err
			}
			return explain.Render(cmd.OutOrStdout(), facts)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&noInspect, "no-inspect", false, "Do not inspect the images (no registry access from this machine).")
	fs.DurationVar(&opts.Timeout, "inspect-timeout", 30*time.Second, "Deadline to inspect the pod's images.")
	fs.StringVar(&opts.OperatorNamespace, "operator-namespace", envOr("POD_NAMESPACE", "archgate-system"), "Namespace archgate runs in.")
	fs.StringVar(&inspectOpts.RegistriesConfPath, "registries-conf", "", "registries.conf (mirrors, blocked and insecure registries) to inspect with.")
	fs.StringVar(&inspectOpts.CABundleFile, "ca-bundle", "", "PEM file of extra CA certificates trusted for every registry.")
	return cmd
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
