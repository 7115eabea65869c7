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

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/pkg/components"
)

// newWebhookCmd returns `archgate webhook`: the scheduling-gate mutating admission webhook.
func newWebhookCmd(g *globalFlags) *cobra.Command {
	var f cmdline.Webhook
	cmd := serverCmd(g, cmdline.WebhookCommand, "Serve the mutating admission webhook that adds the scheduling gate to new pods",
		func(ctx context.Context, cfg *rest.Config, log logr.Logger) error {
			if f.Namespace != "" {
				return components.RunLocalWebhook(ctx, cfg, localWebhookOptions(f, log))
			}
			return components.RunWebhook(ctx, cfg, webhookOptions(f, log))
		})
	cmdline.BindWebhook(cmd.Flags(), &f)
	return cmd
}

// webhookOptions are the webhook's options from its flags.
func webhookOptions(f cmdline.Webhook, log logr.Logger) components.WebhookOptions {
	return components.WebhookOptions{
		Common: commonOptions(f.Common, log), Host: f.Host, Port: f.Port, CertDir: f.CertDir, OperatorNamespace: f.OperatorNamespace,
		KnownImagesConfigMap: f.KnownImagesConfigMap, MaxImagesPerPod: f.MaxImagesPerPod,
	}
}

// localWebhookOptions are a local webhook's options from the flags of `archgate webhook --namespace`.
func localWebhookOptions(f cmdline.Webhook, log logr.Logger) components.LocalWebhookOptions {
	return components.LocalWebhookOptions{Common: commonOptions(f.Common, log), Namespace: f.Namespace, Host: f.Host, Port: f.Port, CertDir: f.CertDir}
}
