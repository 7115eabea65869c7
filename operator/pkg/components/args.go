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

package components

import (
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
)

// The functions below render the options of a component as the command line of the archgate
// binary that runs it (package cmdline, the binary's own flag definitions), for the simulator,
// which starts the components as processes. A zero option is left to the binary's default for
// its flag; Scheme, Registerer, Restartable, Logger and Ready have no flag.

// Process is what the archgate binary takes besides a component's options.
type Process struct {
	// Kubeconfig is the path of the kubeconfig the component connects with.
	Kubeconfig string
	// LogVerbosity is as in ClusterPodPlacementConfig spec.logVerbosity.
	LogVerbosity v1beta1.LogVerbosityLevel
}

func (p Process) global() cmdline.Global {
	return cmdline.Global{Kubeconfig: p.Kubeconfig, LogVerbosity: p.LogVerbosity}
}

// CommonArgs renders the flags of c alone, to add to a command line rendered elsewhere.
func CommonArgs(c Common) []string { return c.flags().Args() }

// WebhookArgs is the command line, subcommand first, of `archgate webhook` serving o.
func WebhookArgs(p Process, o WebhookOptions) []string {
	return cmdline.Command(cmdline.WebhookCommand, p.global(), cmdline.Webhook{
		Common: o.flags(), Host: o.Host, Port: o.Port, CertDir: o.CertDir, OperatorNamespace: o.OperatorNamespace,
		KnownImagesConfigMap: o.KnownImagesConfigMap, MaxImagesPerPod: o.MaxImagesPerPod,
	}.Args())
}

// LocalWebhookArgs is the command line of `archgate webhook --namespace` serving o.
func LocalWebhookArgs(p Process, o LocalWebhookOptions) []string {
	return cmdline.Command(cmdline.WebhookCommand, p.global(), cmdline.Webhook{
		Common: o.flags(), Namespace: o.Namespace, Host: o.Host, Port: o.Port, CertDir: o.CertDir,
	}.Args())
}

// ControllerArgs is the command line of `archgate controller` running o.
func ControllerArgs(p Process, o ControllerOptions) []string {
	return cmdline.Command(cmdline.ControllerCommand, p.global(), cmdline.Controller{
		Common:                        o.flags(),
		OperatorNamespace:             o.OperatorNamespace,
		GlobalPullSecret:              o.GlobalPullSecret,
		RegistriesConfPath:            o.RegistriesConfPath,
		RegistriesConfDirPath:         o.RegistriesConfDirPath,
		CertsDir:                      o.CertsDir,
		CABundleFile:                  o.CABundleFile,
		AuthFilePath:                  o.AuthFilePath,
		InsecureSkipTLSVerify:         o.InsecureSkipTLSVerify,
		CredentialProviderConfig:      o.CredentialProviderConfig,
		CredentialProviderBinDir:      o.CredentialProviderBinDir,
		Workers:                       o.Workers,
		InspectWorkers:                o.InspectWorkers,
		NamespaceWorkers:              o.NamespaceWorkers,
		ImageInspection:               o.ImageInspection,
		RetryBaseDelay:                o.RetryBaseDelay,
		RetryMaxDelay:                 o.RetryMaxDelay,
		KnownImagesConfigMap:          o.KnownImagesConfigMap,
		PlacementParametersConfigMap:  o.PlacementParametersConfigMap,
		ExecFormatErrorMonitor:        o.ExecFormatErrorMonitor,
		ExecFormatErrorDeleteInterval: o.ExecFormatErrorDeleteInterval,
		LeaderElection:                o.LeaderElection,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionID:              o.LeaderElectionID,
	}.Args())
}

// LocalControllerArgs is the command line of `archgate controller --namespace` running o.
func LocalControllerArgs(p Process, o LocalControllerOptions) []string {
	return cmdline.Command(cmdline.ControllerCommand, p.global(), cmdline.Controller{
		Common: o.flags(), Namespace: o.Namespace, Workers: o.Workers,
	}.Args())
}

func (c Common) flags() cmdline.Common {
	return cmdline.Common{
		QPS: c.QPS, Burst: c.Burst, MetricsBindAddress: c.MetricsBindAddress, HealthProbeBindAddress: c.HealthProbeBindAddress,
		MetricsCertDir: c.MetricsCertDir, PprofBindAddress: c.PprofBindAddress, EnableHTTP2: c.EnableHTTP2,
	}
}
