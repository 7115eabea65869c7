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
	"context"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/pkg/components"
)

// newOperatorCmd returns `archgate operator`: the ClusterPodPlacementConfig reconciler and the
// validating webhooks of the multiarch.openshift.io API.
func newOperatorCmd(g *globalFlags) *cobra.Command {
	opts := components.OperatorOptions{}
	var common cmdline.Common
	cmd := serverCmd(g, "operator", "Run the operator: roll out the webhook and the pod placement controller from the ClusterPodPlacementConfig, and validate placement configurations",
		func(ctx context.Context, cfg *rest.Config, log logr.Logger) error {
			opts.Common = commonOptions(common, log)
			return components.RunOperator(ctx, cfg, opts)
		})
	fs := cmd.Flags()
	cmdline.BindCommon(fs, &common)
	fs.StringVar(&opts.Namespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "Namespace the operator runs in and rolls the components out to (default $POD_NAMESPACE).")
	fs.StringVar(&opts.Image, "image", os.Getenv(components.EnvImage), "Image of the components; empty for the operator's own image (default $"+components.EnvImage+").")
	fs.StringVar(&opts.PodName, "pod-name", os.Getenv("POD_NAME"), "The operator's own pod, to find its image (default $POD_NAME).")
	fs.StringVar(&opts.CertProvider, "cert-provider", "self-signed", "Who issues the webhooks' serving certificates: self-signed (the operator), cert-manager or service-ca (OpenShift).")
	fs.StringVar((*string)(&opts.Platform), "platform", "", "Kubernetes or OpenShift: decides the default global pull secret and whether spec.globalPullSecretRef is allowed; empty detects it.")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "Reconcile on one replica at a time, with a leader election lease.")
	fs.DurationVar(&opts.FailOpenGracePeriod, "fail-open-grace-period", components.DefaultFailOpenGracePeriod,
		"How long the webhook or the controller may stay unavailable before the scheduling-gate webhook is unregistered and new pods are admitted ungated; negative for at once.")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", components.DefaultOperatorLeaderElectionID, "Name of the lease.")
	fs.StringVar(&opts.WebhookHost, "webhook-host", "", "Address the validating webhooks listen on; empty for all interfaces.")
	fs.IntVar(&opts.WebhookPort, "webhook-port", components.DefaultWebhookPort, "TLS port of the validating webhooks.")
	fs.StringVar(&opts.WebhookCertDir, "webhook-cert-dir", "", "Serve the validating webhooks with "+components.TLSCertName+"/"+components.TLSKeyName+
		" from this directory and leave the operator's own certificate alone; empty to use the certificate --cert-provider maintains.")
	return cmd
}
