package operand

import (
	"context"
	"errors"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/pkg/roles"
)

// webhookConfigurationName names the MutatingWebhookConfiguration the
// simulator registers.
const webhookConfigurationName = "archgate-simulator"

// newOperator wires the components to the operator's start-up package.
// Every start gets a fresh metrics registry (Counters keeps the final
// values of stopped instances) and a ready channel closed by the
// component's Ready callback.
func newOperator(cfg Config) (*Operator, error) {
	if cfg.RestConfig == nil {
		return nil, errors.New("operand: nil rest.Config")
	}
	o := &Operator{Counters: NewCounters()}
	common := func(name string) (roles.Common, ReadyFunc, func()) {
		reg := o.Counters.NewRegistry()
		ready := make(chan struct{})
		c := roles.Common{
			QPS:        cfg.QPS,
			Burst:      cfg.Burst,
			Registerer: reg,
			Logger:     cfg.Logger.WithName(name),
			Ready:      func() { close(ready) },
		}
		readyFunc := func(ctx context.Context) error {
			select {
			case <-ready:
				return nil
			default:
				return errors.New("not ready yet")
			}
		}
		return c, readyFunc, func() { o.Counters.Retire(reg) }
	}

	var retireWebhook, retireController func()
	o.Webhook = &Runner{
		Name: "webhook",
		Prepare: func() (RunFunc, ReadyFunc, error) {
			c, ready, retire := common("webhook")
			retireWebhook = retire
			opts := roles.WebhookOptions{
				Common:            c,
				Host:              cfg.WebhookHost,
				Port:              cfg.WebhookPort,
				CertDir:           cfg.WebhookCertDir,
				OperatorNamespace: cfg.Namespace,
			}
			return func(ctx context.Context) error { return roles.RunWebhook(ctx, cfg.RestConfig, opts) }, ready, nil
		},
		OnStop: func() { retireWebhook() },
	}
	cacheSize := cfg.CacheSize
	if cacheSize == 0 {
		cacheSize = -1 // the cluster config's cacheSize 0 disables the cache; roles reads 0 as "default"
	}
	maxRetries := cfg.MaxRetries
	if maxRetries == 0 {
		maxRetries = -1
	}
	o.Controller = &Runner{
		Name: "placement controller",
		Prepare: func() (RunFunc, ReadyFunc, error) {
			c, ready, retire := common("controller")
			retireController = retire
			opts := roles.ControllerOptions{
				Common:                c,
				OperatorNamespace:     cfg.Namespace,
				GlobalPullSecret:      cfg.GlobalPullSecret,
				CertsDir:              cfg.CertsDir,
				InsecureSkipTLSVerify: cfg.InsecureRegistry,
				Workers:               cfg.Workers,
				InspectWorkers:        cfg.InspectWorkers,
				CacheSize:             cacheSize,
				CacheTTL:              cfg.CacheTTL,
				InspectTimeout:        cfg.InspectTimeout,
				MaxRetries:            maxRetries,
				RetryBaseDelay:        cfg.RetryBaseDelay,
				RetryMaxDelay:         cfg.RetryMaxDelay,
			}
			return func(ctx context.Context) error { return roles.RunPlacementController(ctx, cfg.RestConfig, opts) }, ready, nil
		},
		OnStop: func() { retireController() },
	}
	o.webhookConfiguration = func(baseURL string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
		cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + roles.WebhookPath)}
		return roles.MutatingWebhookConfiguration(webhookConfigurationName, cc, caBundle, cfg.NamespaceSelector, cfg.Namespace)
	}
	return o, nil
}
