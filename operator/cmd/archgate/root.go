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
	"flag"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/pkg/components"
)

// subcommands are the constructors of archgate's subcommands, one per file. To add one, write
// newXxxCmd in its own file and list it here.
var subcommands = []func(*globalFlags) *cobra.Command{
	newWebhookCmd,
	newControllerCmd,
	newOperatorCmd,
	newUngateCmd,
	newExplainCmd,
	newVersionCmd,
	newCopyHostFilesCmd,
}

// globalFlags are the flags every subcommand shares: connection and logging.
type globalFlags struct {
	cmdline.Global
	zap zap.Options
}

// newRootCmd returns the archgate command with every subcommand.
func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "archgate",
		Short:         "Architecture-aware pod placement for mixed-CPU Kubernetes clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.setUpLogging()
		},
	}
	pf := root.PersistentFlags()
	cmdline.BindGlobal(pf, &g.Global)
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	g.zap.BindFlags(zfs)
	pf.AddGoFlagSet(zfs)
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd(g))
	}
	return root
}

// setUpLogging installs the logger for controller-runtime and client-go (klog).
func (g *globalFlags) setUpLogging() error {
	if level := g.LogVerbosity; level != "" {
		switch level {
		case v1beta1.LogVerbosityNormal, v1beta1.LogVerbosityDebug, v1beta1.LogVerbosityTrace, v1beta1.LogVerbosityTraceAll:
		default:
			return fmt.Errorf("--%s %q: want one of Normal, Debug, Trace, TraceAll", cmdline.FlagLogVerbosity, level)
		}
		g.zap.Level = zapcore.Level(-level.Level())
	}
	logger := zap.New(zap.UseFlagOptions(&g.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	return nil
}

// logger returns the configured logger.
func (g *globalFlags) logger() logr.Logger { return ctrl.Log }

// clientConfig is the kubeconfig as kubectl reads it: --kubeconfig, $KUBECONFIG or
// ~/.kube/config, then the in-cluster configuration; --context selects the context.
func (g *globalFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.Context})
}

// restConfig loads the client configuration.
func (g *globalFlags) restConfig() (*rest.Config, error) {
	cfg, err := g.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration: %w", err)
	}
	return cfg, nil
}

// namespace is the namespace of the kubeconfig's context ("default" when it names none).
func (g *globalFlags) namespace() (string, error) {
	ns, _, err := g.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig's namespace: %w", err)
	}
	return ns, nil
}

// client is an uncached client of the cluster for the one-shot commands (explain, ungate),
// knowing archgate's kinds.
func (g *globalFlags) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	scheme, err := components.NewScheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// serverCmd returns the subcommand use of a server that the Deployments run: no arguments, left out
// of the help (it is not a command for users), run with the client configuration and the
// logger. The caller binds its flags.
func serverCmd(g *globalFlags, use, short string, run func(ctx context.Context, cfg *rest.Config, log logr.Logger) error) *cobra.Command {
	return &cobra.Command{
		Use:    use,
		Short:  short,
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			return run(cmd.Context(), cfg, g.logger())
		},
	}
}

// commonOptions are the components' common options from their flags.
func commonOptions(c cmdline.Common, log logr.Logger) components.Common {
	return components.Common{
		QPS: c.QPS, Burst: c.Burst, MetricsBindAddress: c.MetricsBindAddress, HealthProbeBindAddress: c.HealthProbeBindAddress,
		MetricsCertDir: c.MetricsCertDir, PprofBindAddress: c.PprofBindAddress, EnableHTTP2: c.EnableHTTP2, Logger: log,
	}
}
