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
	"flag"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/archgate/archgate/operator/api/v1beta1"
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
	kubeconfig   string
	context      string
	zap          zap.Options
	logVerbosity string
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
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; default $KUBECONFIG, ~/.kube/config, then the in-cluster configuration.")
	pf.StringVar(&g.context, "context", "", "The kubeconfig context to use; default its current context.")
	pf.StringVar(&g.logVerbosity, "log-verbosity", "", "Log verbosity as in ClusterPodPlacementConfig spec.logVerbosity (Normal, Debug, Trace, TraceAll); overrides --zap-log-level.")
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
	if g.logVerbosity != "" {
		level := v1beta1.LogVerbosityLevel(g.logVerbosity)
		switch level {
		case v1beta1.LogVerbosityNormal, v1beta1.LogVerbosityDebug, v1beta1.LogVerbosityTrace, v1beta1.LogVerbosityTraceAll:
		default:
			return fmt.Errorf("--log-verbosity %q: want one of Normal, Debug, Trace, TraceAll", g.logVerbosity)
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
	rules.ExplicitPath = g.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.context})
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

// commonFlags binds the flags of components.Common.
func commonFlags(fs *pflag.FlagSet, c *components.Common) {
	fs.Float32Var(&c.QPS, "kube-api-qps", components.DefaultQPS, "Client rate limit (queries per second) towards the apiserver.")
	fs.IntVar(&c.Burst, "kube-api-burst", components.DefaultBurst, "Client burst towards the apiserver.")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", ":8443",
		`Address of the Prometheus metrics endpoint (HTTPS; clients need a bearer token allowed to get /metrics); "0" disables it.`)
	fs.StringVar(&c.MetricsCertDir, "metrics-cert-dir", "",
		"Directory with tls.crt and tls.key of the metrics endpoint; empty or missing files: a self-signed certificate generated at start.")
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", ":8081", `Address of /healthz and /readyz; "0" disables them.`)
	fs.StringVar(&c.PprofBindAddress, "pprof-bind-address", "0", `Address of /debug/pprof (CPU and heap profiles); "0" disables it.`)
	fs.BoolVar(&c.EnableHTTP2, "enable-http2", false,
		"Serve HTTP/2 on the webhook and metrics endpoints. Off: over HTTP/2 the apiserver sends every admission to one webhook replica.")
}

// namespacedName parses "namespace/name".
func namespacedName(flagName, s string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("--%s %q: want namespace/name", flagName, s)
	}
	return ns, name, nil
}
