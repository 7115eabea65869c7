package operand

import (
	"context"
	"errors"
	"net"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/pkg/components"
)

// Component names of a namespace's local components (ClusterPodPlacementConfig
// spec.localPlacement), as the report lists them: the processes of all namespaces are summed
// under these names.
const (
	ComponentLocalWebhook    = "local-webhook"
	ComponentLocalController = "local-controller"
)

// Local is one namespace's local webhook and local controller, as the operator deploys them
// (`archgate webhook|controller --namespace`), ready to start.
type Local struct {
	Namespace  string
	Webhook    Operand
	Controller Operand
	// port is the webhook's port on cfg.WebhookHost.
	port int
	host string
}

// NewLocal prepares namespace's local components, serving with cfg's webhook certificate: as
// processes of the archgate binary when cfg.Binary is set, else in-process.
func NewLocal(cfg Config, namespace string) (*Local, error) {
	if cfg.RestConfig == nil {
		return nil, errors.New("operand: nil rest.Config")
	}
	ports, err := FreePorts(cfg.WebhookHost, 1)
	if err != nil {
		return nil, err
	}
	l := &Local{Namespace: namespace, port: ports[0], host: cfg.WebhookHost}
	if cfg.Binary == "" {
		l.inProcess(cfg)
		return l, nil
	}
	wh, err := newArchgateProcess(cfg, archgateProcess{name: ComponentLocalWebhook, log: ComponentLocalWebhook + "-" + namespace,
		command: func(p components.Process, c components.Common) []string {
			return components.LocalWebhookArgs(p, l.webhookOptions(cfg, c))
		}})
	if err != nil {
		return nil, err
	}
	ctl, err := newArchgateProcess(cfg, archgateProcess{name: ComponentLocalController, log: ComponentLocalController + "-" + namespace,
		command: func(p components.Process, c components.Common) []string {
			return components.LocalControllerArgs(p, components.LocalControllerOptions{Common: c, Namespace: namespace})
		}})
	if err != nil {
		return nil, err
	}
	l.Webhook, l.Controller = wh, ctl
	return l, nil
}

func (l *Local) inProcess(cfg Config) {
	common := func(name string) (components.Common, <-chan struct{}) {
		ready := make(chan struct{})
		return components.Common{QPS: cfg.QPS, Burst: cfg.Burst, Restartable: true,
			Logger: cfg.Logger.WithName(name).WithValues("namespace", l.Namespace), Ready: func() { close(ready) }}, ready
	}
	l.Webhook = &Runner{Name: ComponentLocalWebhook + " " + l.Namespace, Prepare: func() (RunFunc, <-chan struct{}, error) {
		c, ready := common(ComponentLocalWebhook)
		opts := l.webhookOptions(cfg, c)
		return func(ctx context.Context) error { return components.RunLocalWebhook(ctx, cfg.RestConfig, opts) }, ready, nil
	}}
	l.Controller = &Runner{Name: ComponentLocalController + " " + l.Namespace, Prepare: func() (RunFunc, <-chan struct{}, error) {
		c, ready := common(ComponentLocalController)
		opts := components.LocalControllerOptions{Common: c, Namespace: l.Namespace}
		return func(ctx context.Context) error { return components.RunLocalController(ctx, cfg.RestConfig, opts) }, ready, nil
	}}
}

// webhookOptions are the local webhook's options, in-process or as a process.
func (l *Local) webhookOptions(cfg Config, c components.Common) components.LocalWebhookOptions {
	return components.LocalWebhookOptions{Common: c, Namespace: l.Namespace, Host: cfg.WebhookHost, Port: l.port, CertDir: cfg.WebhookCertDir}
}

// WebhookConfiguration registers the local webhook for its namespace only, trusting caBundle. Its
// name sorts before the cluster-wide webhook's (archgate-simulator), as the operator's
// archgate-local-scheduling-gate sorts before archgate-scheduling-gate: the apiserver calls the
// local webhook first.
func (l *Local) WebhookConfiguration(caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	url := "https://" + net.JoinHostPort(l.host, strconv.Itoa(l.port)) + components.LocalWebhookPath
	return components.MutatingWebhookConfiguration(components.WebhookConfigurationOptions{
		Name:              "archgate-local-" + l.Namespace,
		ClientConfig:      admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)},
		CABundle:          caBundle,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: l.Namespace}},
		EntryName:         components.LocalWebhookEntryName(l.Namespace),
		Path:              components.LocalWebhookPath,
	})
}
