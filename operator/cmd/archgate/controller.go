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
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/settings"
)

// newControllerCmd returns `archgate controller`: the pod placement controller.
func newControllerCmd(g *globalFlags) *cobra.Command {
	opts := components.ControllerOptions{}
	var inspection v1beta1.ImageInspectionSettings
	var globalPullSecret, localNamespace string
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the pod placement controller, which inspects gated pods' images and removes the gate",
		Args:  cobra.NoArgs,
		// A server the Deployments run, not a command for users: left out of the help.
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if globalPullSecret != "" {
				ns, name, err := namespacedName("global-pull-secret", globalPullSecret)
				if err != nil {
					return err
				}
				opts.GlobalPullSecret = &types.NamespacedName{Namespace: ns, Name: name}
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			opts.Logger = g.logger()
			if localNamespace != "" {
				return components.RunLocalController(cmd.Context(), cfg, components.LocalControllerOptions{
					Common: opts.Common, Namespace: localNamespace, Workers: opts.Workers})
			}
			opts.ImageInspection = &inspection
			return components.RunPlacementController(cmd.Context(), cfg, opts)
		},
	}
	fs := cmd.Flags()
	commonFlags(fs, &opts.Common)
	fs.StringVar(&localNamespace, "namespace", "", "Run as the local pod placement controller of this namespace: apply its PodPlacementConfigs and remove the local scheduling gate (no image inspection; the other flags but the common ones and --workers are ignored).")
	fs.StringVar(&opts.OperatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the operator: default namespace of the leader election lease (default $POD_NAMESPACE).")
	fs.StringVar(&globalPullSecret, "global-pull-secret", "", "namespace/name of the cluster-wide pull secret (kubernetes.io/dockerconfigjson or dockercfg); empty for none.")
	fs.StringVar(&opts.RegistriesConfPath, "registries-conf", "", "registries.conf (mirrors, blocked and insecure registries); empty for /etc/containers/registries.conf.")
	fs.StringVar(&opts.RegistriesConfDirPath, "registries-conf-dir", "", "registries.conf.d drop-in directory.")
	fs.StringVar(&opts.CertsDir, "certs-dir", "", "certs.d directory: a host[:port] subdirectory of CA certificates per registry.")
	fs.StringVar(&opts.CABundleFile, "ca-bundle", "", "PEM file of CA certificates trusted for every registry, on top of the system roots.")
	fs.StringVar(&opts.AuthFilePath, "auth-file", "", "Docker/podman auth file, used for registry mirrors.")
	fs.StringVar(&opts.CredentialProviderConfig, settings.FlagCredentialProviderConfig, "", "kubelet CredentialProviderConfig (kubelet.config.k8s.io/v1) of the credential provider plugins whose credentials are tried after the global pull secret; empty for none.")
	fs.StringVar(&opts.CredentialProviderBinDir, settings.FlagCredentialProviderBinDir, "", "Directory of the credential provider plugins' executables (the kubelet's --image-credential-provider-bin-dir).")
	fs.BoolVar(&opts.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "Skip TLS verification and allow plain HTTP for every registry (development only).")
	fs.IntVar(&opts.Workers, "workers", components.DefaultWorkers, "Pods processed concurrently.")
	fs.IntVar(&opts.InspectWorkers, "inspect-workers", components.DefaultInspectWorkers, "Images of one pod inspected concurrently.")
	fs.IntVar(&opts.NamespaceWorkers, "namespace-workers", 0, "Pods of one namespace processed concurrently, so that one namespace cannot hold every worker (0: a quarter of --workers).")
	settings.BindImageInspectionFlags(fs, &inspection)
	fs.DurationVar(&opts.RetryBaseDelay, "retry-base-delay", components.DefaultRetryBaseDelay, "First retry delay; it doubles per retry.")
	fs.DurationVar(&opts.RetryMaxDelay, "retry-max-delay", components.DefaultRetryMaxDelay, "Longest retry delay.")
	fs.StringVar(&opts.KnownImagesConfigMap, settings.FlagKnownImagesConfigMap, "",
		"ConfigMap of --operator-namespace where the leader publishes the images it inspected for pods without imagePullSecrets, for the webhook to place pods at admission; empty publishes nothing.")
	fs.StringVar(&opts.PlacementParametersConfigMap, settings.FlagPlacementParameters, "",
		"ConfigMap of --operator-namespace where the leader also publishes the params the admission policy places pods from (with --"+settings.FlagKnownImagesConfigMap+"); empty publishes none.")
	fs.BoolVar(&opts.ExecFormatErrorMonitor, settings.FlagExecFormatErrorMonitor, false,
		"Run the exec-format-error monitor: watch every pod (reduced to its failed containers' states) and report those whose container failed with an exec format error.")
	fs.DurationVar(&opts.ExecFormatErrorDeleteInterval, settings.FlagExecFormatErrorDeleteInterval, 0,
		"With --"+settings.FlagExecFormatErrorMonitor+", also delete each reported pod whose ReplicaSet, StatefulSet or ReplicationController recreates it, at most once per owner per this interval; 0 only reports.")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "Run active-passive with a leader election lease.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the lease (default --operator-namespace).")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", components.DefaultLeaderElectionID, "Name of the lease.")
	return cmd
}
