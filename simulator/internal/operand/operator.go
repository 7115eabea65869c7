package operand

import (
	"errors"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// ErrUnavailable is returned by New when the simulator was built without the
// operator's start-up package.
var ErrUnavailable = errors.New("the operator's start-up package (operator/pkg/roles) is not available in this build")

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
	// CacheSize, CacheTTL, InspectTimeout and MaxRetries come from the
	// cluster config's imageInspection settings.
	CacheSize      int
	CacheTTL       time.Duration
	InspectTimeout time.Duration
	MaxRetries     int
	// RetryBaseDelay and RetryMaxDelay: 0 keeps the operator's defaults.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// NamespaceSelector is the cluster config's namespaceSelector, which the
	// webhook configuration applies.
	NamespaceSelector *metav1.LabelSelector
	// Logger receives the components' logs.
	Logger logr.Logger
}

// Operator is the operator's components, ready to start.
type Operator struct {
	// Webhook is the scheduling-gate webhook server.
	Webhook *Runner
	// Controller is the pod placement controller.
	Controller *Runner
	// Counters sums both components' Prometheus counters across restarts.
	Counters *Counters
	// webhookConfiguration builds the MutatingWebhookConfiguration.
	webhookConfiguration func(baseURL string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration
}

// New prepares the operator's components; nothing runs until Start.
func New(cfg Config) (*Operator, error) { return newOperator(cfg) }

// WebhookConfiguration returns the operator's MutatingWebhookConfiguration
// with its client config pointed at the webhook's path under baseURL
// (https://host:port) and trusting caBundle.
func (o *Operator) WebhookConfiguration(baseURL string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	return o.webhookConfiguration(baseURL, caBundle)
}
