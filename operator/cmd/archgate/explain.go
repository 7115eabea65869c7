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
		namespace   string
		output      string
	)
	cmd := &cobra.Command{
		Use:   "explain POD [-n NAMESPACE] | explain NAMESPACE/POD",
		Short: "Explain what archgate did to a pod: images and their architectures, the affinity it set, its labels and why",
		Long: `Explain what archgate did to a pod and why: whether its namespace is selected, the webhook's
decision, each image and the architectures it supports (inspected now, from this machine, with the
pod's pull secrets and the global pull secret when readable), the node affinity on
kubernetes.io/arch, the labels and annotations archgate wrote, the PodPlacementConfigs that apply,
the node the pod landed on and the Events about it. The namespace is -n, or the one of the
kubeconfig's context; -o json or yaml prints the same as data.`,
		Example: `  archgate explain -n team-a web-7d9f-abcde
  archgate explain team-a/web-7d9f-abcde --no-inspect
  archgate explain -n team-a web-7d9f-abcde -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: want json or yaml (or nothing for the explanation)", output)
			}
			key, err := podKey(args[0], namespace, g.namespace)
			if err != nil {
				return err
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
			facts, err := explain.Gather(cmd.Context(), c, key, opts)
			if err != nil {
				return err
			}
			if output == "" {
				return explain.Render(cmd.OutOrStdout(), facts)
			}
			return printData(cmd.OutOrStdout(), explain.Summarize(facts), output)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&namespace, "namespace", "n", "", "Namespace of the pod; default: the kubeconfig context's.")
	fs.StringVarP(&output, "output", "o", "", "Output format: empty for the explanation, json or yaml.")
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

// podKey reads the pod named on the command line: NAMESPACE/POD, or POD in the namespace of -n,
// else of the kubeconfig's context (contextNamespace).
func podKey(arg, namespace string, contextNamespace func() (string, error)) (types.NamespacedName, error) {
	if ns, name, ok := strings.Cut(arg, "/"); ok {
		if ns == "" || name == "" || (namespace != "" && namespace != ns) {
			return types.NamespacedName{}, fmt.Errorf("%q: want POD with -n NAMESPACE, or NAMESPACE/POD", arg)
		}
		return types.NamespacedName{Namespace: ns, Name: name}, nil
	}
	if namespace == "" {
		var err error
		if namespace, err = contextNamespace(); err != nil {
			return types.NamespacedName{}, err
		}
	}
	return types.NamespacedName{Namespace: namespace, Name: arg}, nil
}
