package operand

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
)

// webhookConfigurationName names the MutatingWebhookConfiguration the
// simulator registers.
const webhookConfigurationName = "archgate-simulator"

// newWebhookAndController wires the components: as processes of the archgate binary
// when cfg.Binary is set, else in-process through the operator's start-up
// package.
func newWebhookAndController(cfg Config) (*WebhookAndController, error) {
	if cfg.RestConfig == nil {
		return nil, errors.New("operand: nil rest.Config")
	}
	o := &WebhookAndController{Counters: NewCounters()}
	if cfg.ControllerReplicas > 1 && cfg.Binary == "" {
		return nil, fmt.Errorf("%d controller replicas need the archgate binary (not --in-process): a standby and a crash are separate processes", cfg.ControllerReplicas)
	}
	if cfg.Binary != "" {
		if err := o.processes(cfg); err != nil {
			return nil, err
		}
	} else {
		o.inProcess(cfg)
	}
	o.webhookConfiguration = func(baseURL string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
		cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + components.WebhookPath)}
		return components.MutatingWebhookConfiguration(components.WebhookConfigurationOptions{
			Name: webhookConfigurationName, ClientConfig: cc, CABundle: caBundle,
			NamespaceSelector: cfg.NamespaceSelector, OperatorNamespace: cfg.Namespace,
			PolicyInEffect: cfg.PlacementParameters != "",
		})
	}
	return o, nil
}

// inProcess runs the components in the simulator's process. Every start gets
// a fresh metrics registry (Counters keeps the final values of stopped
// instances) and a ready channel closed by the component's Ready callback.
func (o *WebhookAndController) inProcess(cfg Config) {
	common := func(name string) (components.Common, <-chan struct{}, func()) {
		reg, retire := o.Counters.NewRegistry()
		ready := make(chan struct{})
		c := components.Common{
			QPS:        cfg.QPS,
			Burst:      cfg.Burst,
			Registerer: reg,
			// The simulator restarts components in its own process.
			Restartable: true,
			Logger:      cfg.Logger.WithName(name),
			Ready:       func() { close(ready) },
		}
		return c, ready, retire
	}
	var retireWebhook, retireController func()
	o.Webhook = &Runner{
		Name: "webhook",
		Prepare: func() (RunFunc, <-chan struct{}, error) {
			c, ready, retire := common("webhook")
			retireWebhook = retire
			opts := webhookOptions(cfg)
			opts.Common = c
			return func(ctx context.Context) error { return components.RunWebhook(ctx, cfg.RestConfig, opts) }, ready, nil
		},
		OnStop: func() { retireWebhook() },
	}
	o.Controller = &Runner{
		Name: "placement controller",
		Prepare: func() (RunFunc, <-chan struct{}, error) {
			c, ready, retire := common("controller")
			retireController = retire
			opts := controllerOptions(cfg)
			opts.Common = c
			return func(ctx context.Context) error { return components.RunPlacementController(ctx, cfg.RestConfig, opts) }, ready, nil
		},
		OnStop: func() { retireController() },
	}
}

// processes runs the components as `archgate webhook` and `archgate
// controller`, with the same settings as inProcess, as flags.
func (o *WebhookAndController) processes(cfg Config) error {
	newProcess := func(name string, command commandFunc) (*Process, error) {
		return newArchgateProcess(cfg, archgateProcess{name: name, log: name, counters: o.Counters, command: command})
	}
	webhook, err := newProcess(ComponentWebhook, func(p components.Process, c components.Common) []string {
		opts := webhookOptions(cfg)
		opts.Common = c
		return components.WebhookArgs(p, opts)
	})
	if err != nil {
		return err
	}
	o.Webhook = webhook
	o.processList = []*Process{webhook}
	controllerArgs := func(p components.Process, c components.Common) []string {
		opts := controllerOptions(cfg)
		opts.Common = c
		// As the operator renders the controller Deployment's args.
		opts.LeaderElection = cfg.ControllerReplicas > 1
		return components.ControllerArgs(p, opts)
	}
	for i := range max(cfg.ControllerReplicas, 1) {
		controller, err := newProcess(ComponentController, controllerArgs)
		if err != nil {
			return err
		}
		if i > 0 {
			controller.LogPath = filepath.Join(cfg.LogDir, fmt.Sprintf("%s-%d.log", ComponentController, i+1))
		}
		o.Controllers = append(o.Controllers, controller)
		o.processList = append(o.processList, controller)
	}
	o.Controller = o.Controllers[0]
	return nil
}

// commandFunc renders the command line of an archgate process, subcommand first, with the
// common options that carry its listen addresses (components.WebhookArgs and the like).
type commandFunc func(components.Process, components.Common) []string

// archgateProcess is one process of the archgate binary.
type archgateProcess struct {
	// name is the component's name in the resource figures (processes of one name are
	// summed); log names its log file, <log>.log.
	name, log string
	// counters receives its scraped counters; nil for none.
	counters *Counters
	command  commandFunc
}

// newArchgateProcess returns the process p of cfg.Binary: connected with cfg.Kubeconfig, its
// metrics, health and pprof on free local ports, its log in cfg.LogDir.
func newArchgateProcess(cfg Config, p archgateProcess) (*Process, error) {
	ports, err := FreePorts("127.0.0.1", 3)
	if err != nil {
		return nil, err
	}
	base := func(scheme string, port int) string {
		return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	metrics, health, pprof := ports[0], ports[1], ports[2]
	pprofAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pprof))
	_, pprofURL := PprofEndpoint(pprofAddr)
	common := components.Common{
		QPS: cfg.QPS, Burst: cfg.Burst,
		MetricsBindAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(metrics)),
		// The webhook's serving certificate (for 127.0.0.1) serves the metrics too,
		// so the scraper verifies it.
		MetricsCertDir:         cfg.WebhookCertDir,
		HealthProbeBindAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(health)),
		PprofBindAddress:       pprofAddr,
	}
	process := components.Process{Kubeconfig: cfg.Kubeconfig, LogVerbosity: v1beta1.LogVerbosityNormal}
	return &Process{
		Name:        p.name,
		Command:     append([]string{cfg.Binary}, p.command(process, common)...),
		ReadyURL:    base("http", health) + "/readyz",
		MetricsURL:  base("https", metrics) + "/metrics",
		MetricsAuth: cfg.MetricsAuth,
		PprofURL:    pprofURL,
		Counters:    p.counters,
		LogPath:     filepath.Join(cfg.LogDir, p.log+".log"),
		OnStart: func(pid int) {
			if cfg.OnStart != nil {
				cfg.OnStart(p.name, pid)
			}
		},
	}, nil
}

// PprofEndpoint returns the argument that makes an archgate component serve
// net/http/pprof on addr (host:port), and the base URL of those handlers
// (Process.PprofURL). Direct mode and the operator-mode kubelet both use it.
func PprofEndpoint(addr string) (arg, url string) {
	return components.CommonArgs(components.Common{PprofBindAddress: addr})[0], "http://" + addr + "/debug/pprof"
}

// FreePorts asks the kernel for n free TCP ports on host, held open
// together so that they differ.
func FreePorts(host string, n int) ([]int, error) {
	var out []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
