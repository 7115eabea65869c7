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
	"os"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/settings"
)

// newWebhookCmd returns `archgate webhook`: the scheduling-gate mutating admission webhook.
func newWebhookCmd(g *globalFlags) *cobra.Command {
	opts := components.WebhookOptions{}
	var localNamespace string
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Serve the mutating admission webhook that adds the scheduling gate to new pods",
		Args:  cobra.NoArgs,
		// A server the Deployments run, not a command for users: left out of the help.
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			opts.Logger = g.logger()
			if localNamespace != "" {
				return components.RunLocalWebhook(cmd.Context(), cfg, components.LocalWebhookOptions{
					Common: opts.Common, Namespace: localNamespace, Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir})
			}
			return components.RunWebhook(cmd.Context(), cfg, opts)
		},
	}
	fs := cmd.Flags()
	commonFlags(fs, &opts.Common)
	fs.StringVar(&opts.Host, "host", "", "Address the webhook listens on; empty for all interfaces.")
	fs.IntVar(&opts.Port, "port", components.DefaultWebhookPort, "TLS port of the webhook.")
	fs.StringVar(&opts.CertDir, "cert-dir", components.DefaultWebhookCertDir, "Directory with the serving certificate ("+components.TLSCertName+", "+components.TLSKeyName+").")
	fs.StringVar(&localNamespace, "namespace", "", "Serve the local scheduling-gate webhook of this namespace (path "+components.LocalWebhookPath+"): add the local gate to its pods that a PodPlacementConfig selects.")
	fs.StringVar(&opts.OperatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the operator, whose pods are never gated (default $POD_NAMESPACE).")
	fs.IntVar(&opts.MaxImagesPerPod, settings.FlagMaxImages, v1beta1.DefaultMaxImagesPerPod,
		"A pod naming more distinct images is admitted without the gate, with a warning (spec.imageInspection.maxImagesPerPod).")
	fs.StringVar(&opts.KnownImagesConfigMap, settings.FlagKnownImagesConfigMap, "",
		"ConfigMap of --operator-namespace with the images the controller inspected for pods without imagePullSecrets: such a pod whose images are all in it is placed at admission, without the gate; empty gates every pod.")
	return cmd
}
