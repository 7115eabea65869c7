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

// Package cmdline is the one home of the command line of `archgate webhook` and `archgate
// controller`: every flag's name, default and help is defined here once, with its binding to a
// pflag.FlagSet (cmd/archgate parses with it) and its rendering from the options structs back
// to arguments (the operator renders its Deployments' args with it, and the simulator its
// processes' through pkg/components). TestRoundTrip holds the two in step, field by field.
//
// Rendering leaves a zero field out, so that the flag's default decides, as a zero option
// means the default in pkg/components; the image inspection settings are the exception: set,
// they are rendered whole, zero meaning zero (the operator resolves spec.imageInspection).
package cmdline

import (
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// The subcommands whose command line this package defines.
const (
	WebhookCommand    = "webhook"
	ControllerCommand = "controller"
)

// Flags named outside this package (error messages, tests).
const (
	FlagLogVerbosity                  = "log-verbosity"
	FlagNamespace                     = "namespace"
	FlagOperatorNamespace             = "operator-namespace"
	FlagMetricsBindAddress            = "metrics-bind-address"
	FlagMetricsCertDir                = "metrics-cert-dir"
	FlagPprofBindAddress              = "pprof-bind-address"
	FlagKnownImagesConfigMap          = "known-images-configmap"
	FlagPlacementParameters           = "placement-parameters-configmap"
	FlagGlobalPullSecret              = "global-pull-secret"
	FlagCredentialProviderConfig      = "image-credential-provider-config"
	FlagCredentialProviderBinDir      = "image-credential-provider-bin-dir"
	FlagExecFormatErrorMonitor        = "exec-format-error-monitor"
	FlagExecFormatErrorDeleteInterval = "exec-format-error-delete-interval"
	FlagWorkers                       = "workers"
	FlagRetryBaseDelay                = "retry-base-delay"
	FlagRetryMaxDelay                 = "retry-max-delay"

	// The image inspection settings (spec.imageInspection).
	FlagCacheSize         = "cache-size"
	FlagCacheTTL          = "cache-ttl"
	FlagInspectTimeout    = "inspect-timeout"
	FlagMaxRetries        = "max-retries"
	FlagFailureCacheTTL   = "failure-cache-ttl"
	FlagMaxGateAge        = "max-gate-age"
	FlagMaxImagesPerPod   = "max-images-per-pod"
	FlagBlockedNetworks   = "blocked-networks"
	FlagAllowedRegistries = "allowed-registries"
)

// Defaults of the flags that pkg/components also applies to a zero option.
const (
	// DefaultQPS and DefaultBurst are the client rate limits: the placement controller writes
	// once per pod and the apiserver, not the client, must be what limits throughput.
	DefaultQPS   = 1000
	DefaultBurst = 2000
	// DefaultWorkers, DefaultInspectWorkers and the retry delays are sized so that the
	// controller is not what limits throughput: the apiserver is (see docs/architecture.md).
	DefaultWorkers          = 32
	DefaultInspectWorkers   = 16
	DefaultRetryBaseDelay   = 200 * time.Millisecond
	DefaultRetryMaxDelay    = 30 * time.Second
	DefaultLeaderElectionID = "archgate-pod-placement.multiarch.openshift.io"
	// DefaultWebhookPort and DefaultWebhookCertDir (controller-runtime's) are where the webhook
	// serves and reads its certificate.
	DefaultWebhookPort    = 9443
	DefaultWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// EnvPodNamespace is the environment variable --operator-namespace defaults to.
	EnvPodNamespace = "POD_NAMESPACE"
)

// Global are the flags of every archgate command (the root command's persistent flags).
type Global struct {
	Kubeconfig string
	Context    string
	// LogVerbosity is spec.logVerbosity's level; cmd/archgate checks it before logging starts.
	LogVerbosity v1beta1.LogVerbosityLevel
}

// Common are the flags of every server subcommand (webhook, controller, operator).
type Common struct {
	QPS                    float32
	Burst                  int
	MetricsBindAddress     string
	HealthProbeBindAddress string
	MetricsCertDir         string
	PprofBindAddress       string
	EnableHTTP2            bool
}

// Webhook is the command line of `archgate webhook`; with Namespace, of a namespace's local
// webhook (which uses Common, Host, Port and CertDir only).
type Webhook struct {
	Common
	Namespace            string
	OperatorNamespace    string
	KnownImagesConfigMap string
	Host                 string
	CertDir              string
	Port                 int
	MaxImagesPerPod      int
}

// Controller is the command line of `archgate controller`; with Namespace, of a namespace's
// local controller (which uses Common and Workers only).
type Controller struct {
	Common
	Namespace                string
	OperatorNamespace        string
	KnownImagesConfigMap     string
	LeaderElection           bool
	LeaderElectionNamespace  string
	LeaderElectionID         string
	GlobalPullSecret         *types.NamespacedName
	CABundleFile             string
	RegistriesConfPath       string
	RegistriesConfDirPath    string
	AuthFilePath             string
	CertsDir                 string
	CredentialProviderConfig string
	CredentialProviderBinDir string
	InsecureSkipTLSVerify    bool
	// ImageInspection is always set after parsing; nil renders none of its flags.
	ImageInspection               *v1beta1.ImageInspectionSettings
	ExecFormatErrorMonitor        bool
	ExecFormatErrorDeleteInterval time.Duration
	PlacementParametersConfigMap  string
	Workers                       int
	InspectWorkers                int
	NamespaceWorkers              int
	RetryBaseDelay                time.Duration
	RetryMaxDelay                 time.Duration
}

// BindGlobal defines the flags of Global on fs.
func BindGlobal(fs *pflag.FlagSet, g *Global) { bindAll(fs, g, globalFields()) }

// Args renders g.
func (g Global) Args() []string { return renderAll(g, globalFields()) }

// BindCommon defines the flags of Common on fs (`archgate operator` has them too).
func BindCommon(fs *pflag.FlagSet, c *Common) { bindAll(fs, c, commonFields()) }

// Args renders c.
func (c Common) Args() []string { return renderAll(c, commonFields()) }

// BindWebhook defines the flags of `archgate webhook` on fs.
func BindWebhook(fs *pflag.FlagSet, w *Webhook) { bindAll(fs, w, webhookFields()) }

// Args renders w, Common included.
func (w Webhook) Args() []string { return renderAll(w, webhookFields()) }

// BindController defines the flags of `archgate controller` on fs.
func BindController(fs *pflag.FlagSet, c *Controller) { bindAll(fs, c, controllerFields()) }

// Args renders c, Common included.
func (c Controller) Args() []string { return renderAll(c, controllerFields()) }

// Command is the whole command line of a subcommand: its name, the global flags, then flags.
func Command(subcommand string, g Global, flags []string) []string {
	return append(append([]string{subcommand}, g.Args()...), flags...)
}

// ParseWebhook parses the flags of `archgate webhook` (the subcommand's name left out) as the
// binary does.
func ParseWebhook(args []string) (Global, Webhook, error) {
	return parseWith(WebhookCommand, BindWebhook, args)
}

// ParseController parses the flags of `archgate controller` (the subcommand's name left out)
// as the binary does.
func ParseController(args []string) (Global, Controller, error) {
	return parseWith(ControllerCommand, BindController, args)
}

func parseWith[O any](subcommand string, bind func(*pflag.FlagSet, *O), args []string) (Global, O, error) {
	var g Global
	var o O
	fs := pflag.NewFlagSet(subcommand, pflag.ContinueOnError)
	BindGlobal(fs, &g)
	bind(fs, &o)
	return g, o, fs.Parse(args)
}
