package operand

import (
	"errors"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// ErrUnavailable is returned by New when the simulator was built without the
// operator's start-up package.
var ErrUnavailable = errors.New("the operator's start-up package (operator/pkg/components) is not available in this build")

// Config is what the simulator hands the operator's components.
type Config struct {
	// RestConfig talks to the apiserver.
	RestConfig *rest.Config
	// Namespace is the operator's namespace.
	Namespace string
	// WebhookHost and WebhookPort are where the webhook serves; WebhookCertDir
	// holds its tls.crt and tls.key.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
	// CertsDir is a certs.d directory with the registry's CA.
	CertsDir string
	// InsecureRegistry lets the controller use plain HTTP (a registry
	// served without TLS).
	InsecureRegistry bool
	// GlobalPullSecret names the global pull secret, or nil.
	GlobalPullSecret *types.NamespacedName
	// Workers, InspectWorkers, QPS and Burst: 0 keeps the operator's defaults.
	Workers, InspectWorkers int
	QPS                     float32
	Burst                   int
	// ImageInspection is the cluster config's spec.imageInspection, resolved
	// by v1beta1.ImageInspection.Settings as the operator resolves it.
	ImageInspection v1beta1.ImageInspectionSettings
	// RetryBaseDelay and RetryMaxDelay: 0 keeps the operator's defaults.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// KnownImagesConfigMap is what the operator renders into both components
	// for spec.admissionPlacement: Enabled; "" for Disabled.
	KnownImagesConfigMap string
	// PlacementParameters names the ConfigMap of the admission policy's params, which the
	// controller publishes, as the operator renders it when the policy is in effect; the webhook
	// configuration then skips the pods the policy labelled. "" for none.
	PlacementParameters string
	// ExecFormatErrorMonitor runs the exec-format-error monitor in the
	// controller, as the operator renders spec.plugins.execFormatErrorMonitor.
	ExecFormatErrorMonitor bool
	// NamespaceSelector is the cluster config's namespaceSelector, which the
	// webhook configuration applies.
	NamespaceSelector *metav1.LabelSelector
	// Logger receives the components' logs (in-process mode).
	Logger logr.Logger

	// ControllerReplicas is the number of controller instances; above 1
	// they run with --leader-elect, as the operator deploys them, and need
	// Binary (a crash is a killed process). 0 means 1.
	ControllerReplicas int

	// Binary is the archgate binary: set, the components run as its
	// `webhook` and `controller` processes; empty, in the simulator's process.
	Binary string
	// Kubeconfig is the file the processes connect with.
	Kubeconfig string
	// LogDir receives each process's log, <component>.log.
	LogDir string
	// OnStart is called with each started process's component name and PID.
	OnStart func(component string, pid int)
	// MetricsAuth is how the processes' HTTPS metrics are scraped: the token
	// of a ServiceAccount bound to the metrics reader role, and the CA of
	// WebhookCertDir's certificate, which the processes also serve their
	// metrics with (--metrics-cert-dir).
	MetricsAuth *MetricsAuth
}

// Component names, as the report lists them.
const (
	ComponentWebhook    = "webhook"
	ComponentController = "controller"
)

// Component is an Operand that can report that it stopped on its own.
type Component interface {
	Operand
	// Err returns an error once the component returned on its own.
	Err() error
}

// WebhookAndController is what the simulator runs of archgate: the scheduling-gate webhook and
// the pod placement controller, ready to start (not the operator, which deploys them in a
// cluster and which the simulator does not run).
type WebhookAndController struct {
	// Webhook is the scheduling-gate webhook server.
	Webhook Component
	// Controller is the pod placement controller (the first instance when
	// ControllerReplicas > 1).
	Controller Component
	// Controllers are every controller instance when they run as processes.
	Controllers []*Process
	// Counters sums both components' Prometheus counters across restarts.
	Counters *Counters
	// webhookConfiguration builds the MutatingWebhookConfiguration.
	webhookConfiguration func(baseURL string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration
	// processList holds the components when they run as processes.
	processList []*Process
}

// Processes returns the components that run as processes (none in-process).
func (o *WebhookAndController) Processes() []*Process { return o.processList }

// New prepares the webhook and the controller; nothing runs until Start.
func New(cfg Config) (*WebhookAndController, error) { return newWebhookAndController(cfg) }

// WebhookConfiguration returns the operator's MutatingWebhookConfiguration
// with its client config pointed at the webhook's path under baseURL
// (https://host:port) and trusting caBundle.
func (o *WebhookAndController) WebhookConfiguration(baseURL string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	return o.webhookConfiguration(baseURL, caBundle)
}
