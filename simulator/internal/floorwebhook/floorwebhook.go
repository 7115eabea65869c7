// Package floorwebhook is the cheapest admission webhook that places pods by
// architecture: it already knows each pod's answer (the required affinity a
// user would write, from the scenario's catalog) and only returns it as a
// patch. A pass through it measures what any admission-webhook design pays on
// the cluster (the apiserver's admission call with archgate's own
// registration, controller-runtime's webhook server, the decoding, the patch)
// apart from the work archgate does to find the answer (its webhook's
// lookups, the controller, the registry).
package floorwebhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/go-openapi/jsonpointer"
	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/pkg/components"

	"github.com/archgate/archgate/simulator/internal/operand"
)

// Label marks every pod the floor webhook admitted (LabelValue), so that a
// dry run shows whether the apiserver calls it.
const (
	Label      = "sim.archgate.io/floor-webhook"
	LabelValue = "admitted"
)

// Answers returns the affinity the pod named podName needs, nil when it
// needs none (it pins its architecture itself, or runs anywhere).
type Answers func(podName string) *corev1.Affinity

// Handler admits every pod with the label and, when it has no affinity of
// its own, the affinity Answers gives. Like archgate's webhook it never
// denies.
type Handler struct {
	decoder admission.Decoder
	answers Answers
}

// NewHandler returns the handler; scheme must know core/v1.
func NewHandler(scheme *runtime.Scheme, answers Answers) *Handler {
	return &Handler{decoder: admission.NewDecoder(scheme), answers: answers}
}

// Handle implements admission.Handler.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Allowed("")
	}
	return admission.Patched("", Patch(pod, h.answers(pod.Name))...)
}

// Patch is the JSON patch that labels pod and, when it has no affinity, sets
// affinity (nil: none).
func Patch(pod *corev1.Pod, affinity *corev1.Affinity) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	if pod.Labels == nil {
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{Label: LabelValue}))
	} else {
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels/"+jsonpointer.Escape(Label), LabelValue))
	}
	if affinity != nil && pod.Spec.Affinity == nil {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/affinity", affinity))
	}
	return ops
}

// Path is where the server serves the handler.
const Path = "/floor-pods"

// configurationName names the MutatingWebhookConfiguration.
const configurationName = "archgate-simulator-floor"

// Server is the floor webhook serving on a loopback port, registered with
// the apiserver as archgate's webhook is (components.MutatingWebhookConfiguration).
type Server struct {
	crc    crclient.Client
	mwc    *admissionregistrationv1.MutatingWebhookConfiguration
	cancel context.CancelFunc
	done   chan error
}

// Start serves h with a self-signed certificate written to certDir and
// registers it; the caller waits until the apiserver calls it (a dry run
// labelled with Label) and calls Stop.
func Start(ctx context.Context, crc crclient.Client, h *Handler, certDir string) (*Server, error) {
	const host = "127.0.0.1"
	ports, err := operand.FreePorts(host, 1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	caPEM, err := components.WriteSelfSignedServingCert(certDir, 24*time.Hour, host)
	if err != nil {
		return nil, err
	}
	srv := webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir,
		CertName: components.TLSCertName, KeyName: components.TLSKeyName})
	srv.Register(Path, &admission.Webhook{Handler: h})
	sctx, cancel := context.WithCancel(ctx)
	s := &Server{crc: crc, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Start(sctx) }()

	u := url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: Path}
	s.mwc = components.MutatingWebhookConfiguration(components.WebhookConfigurationOptions{
		Name:         configurationName,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(u.String())},
		CABundle:     caPEM,
	})
	if err := crc.Create(ctx, s.mwc); err != nil {
		return nil, errors.Join(fmt.Errorf("registering the floor webhook: %w", err), s.Stop())
	}
	return s, nil
}

// Unregister deletes the webhook's registration; the caller waits until the
// apiserver no longer calls it, then calls Stop.
func (s *Server) Unregister(ctx context.Context) error {
	return crclient.IgnoreNotFound(s.crc.Delete(ctx, s.mwc))
}

// Stop stops the server; Unregister first, or the apiserver keeps calling it
// (and, failing open, admits pods without the affinity).
func (s *Server) Stop() error {
	s.cancel()
	if err := <-s.done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
