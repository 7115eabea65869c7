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

// newControllerCmd returns `archgate controller`: the pod placement controller.
func newControllerCmd(g *globalFlags) *cobra.Command {
	var f cmdline.Controller
	cmd := serverCmd(g, cmdline.ControllerCommand, "Run the pod placement controller, which inspects gated pods' images and removes the gate",
		func(ctx context.Context, cfg *rest.Config, log logr.Logger) error {
			if f.Namespace != "" {
				return components.RunLocalController(ctx, cfg, localControllerOptions(f, log))
			}
			return components.RunPlacementController(ctx, cfg, controllerOptions(f, log))
		})
	cmdline.BindController(cmd.Flags(), &f)
	return cmd
}

// controllerOptions are the placement controller's options from its flags.
func controllerOptions(f cmdline.Controller, log logr.Logger) components.ControllerOptions {
	return components.ControllerOptions{
		Common:                        commonOptions(f.Common, log),
		OperatorNamespace:             f.OperatorNamespace,
		GlobalPullSecret:              f.GlobalPullSecret,
		RegistriesConfPath:            f.RegistriesConfPath,
		RegistriesConfDirPath:         f.RegistriesConfDirPath,
		CertsDir:                      f.CertsDir,
		CABundleFile:                  f.CABundleFile,
		AuthFilePath:                  f.AuthFilePath,
		InsecureSkipTLSVerify:         f.InsecureSkipTLSVerify,
		CredentialProviderConfig:      f.CredentialProviderConfig,
		CredentialProviderBinDir:      f.CredentialProviderBinDir,
		Workers:                       f.Workers,
		InspectWorkers:                f.InspectWorkers,
		NamespaceWorkers:              f.NamespaceWorkers,
		ImageInspection:               f.ImageInspection,
		RetryBaseDelay:                f.RetryBaseDelay,
		RetryMaxDelay:                 f.RetryMaxDelay,
		KnownImagesConfigMap:          f.KnownImagesConfigMap,
		PlacementParametersConfigMap:  f.PlacementParametersConfigMap,
		ExecFormatErrorMonitor:        f.ExecFormatErrorMonitor,
		ExecFormatErrorDeleteInterval: f.ExecFormatErrorDeleteInterval,
		LeaderElection:                f.LeaderElection,
		LeaderElectionNamespace:       f.LeaderElectionNamespace,
		LeaderElectionID:              f.LeaderElectionID,
	}
}

// localControllerOptions are a local controller's options from the flags of `archgate
// controller --namespace`.
func localControllerOptions(f cmdline.Controller, log logr.Logger) components.LocalControllerOptions {
	return components.LocalControllerOptions{Common: commonOptions(f.Common, log), Namespace: f.Namespace, Workers: f.Workers}
}
