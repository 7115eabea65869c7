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

package components

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/admissionpolicy"
	"github.com/archgate/archgate/operator/internal/cmdline"
	gatewebhook "github.com/archgate/archgate/operator/internal/webhook"
)

// Webhook defaults and well-known values.
const (
	// WebhookPath is the HTTP path the scheduling-gate webhook serves (webhook.Path).
	WebhookPath = gatewebhook.Path
	// DefaultWebhookPort is the port the webhook listens on when WebhookOptions.Port is zero.
	DefaultWebhookPort = cmdline.DefaultWebhookPort
	// DefaultWebhookCertDir is where the serving certificate is read from when
	// WebhookOptions.CertDir is empty (controller-runtime's default).
	DefaultWebhookCertDir = cmdline.DefaultWebhookCertDir
	// TLSCertName and TLSKeyName are the files of the serving certificate in the cert directory
	// (the keys of a kubernetes.io/tls secret).
	TLSCertName = "tls.crt"
	TLSKeyName  = "tls.key"
)

// WebhookOptions configure the scheduling-gate webhook.
type WebhookOptions struct {
	Common
	// Host is the address the webhook listens on; "" means all interfaces.
	Host string
	// Port is the TLS port; DefaultWebhookPort when zero.
	Port int
	// CertDir holds the serving certificate, TLSCertName and TLSKeyName (reloaded when they
	// change); DefaultWebhookCertDir when empty.
	CertDir string
	// OperatorNamespace is the namespace the operator runs in; its pods are never gated.
	OperatorNamespace string
	// KnownImagesConfigMap names the ConfigMap of OperatorNamespace where the controller
	// publishes the images it inspected for pods without imagePullSecrets (package knownimages). When set, a pod whose
	// images are all in it is placed at admission instead of gated, and the webhook watches that
	// ConfigMap and the placement configurations. Empty gates every pod.
	KnownImagesConfigMap string
	// MaxImagesPerPod is spec.imageInspection.maxImagesPerPod: a pod naming more distinct images
	// is admitted ungated, with a warning; v1beta1.DefaultMaxImagesPerPod when zero.
	MaxImagesPerPod int
}

func (o WebhookOptions) withDefaults(ctx context.Context) (WebhookOptions, error) {
	var err error
	o.Common, err = o.Common.withDefaults(ctx)
	o.Port = cmp.Or(o.Port, DefaultWebhookPort)
	o.CertDir = cmp.Or(o.CertDir, DefaultWebhookCertDir)
	o.MaxImagesPerPod = cmp.Or(max(o.MaxImagesPerPod, 0), v1beta1.DefaultMaxImagesPerPod)
	return o, err
}

// newWebhookMetrics returns the webhook's collectors, registered with r: with
// controller-runtime's own, what the webhook exports (docs/metrics.md is tested against it).
func newWebhookMetrics(r prometheus.Registerer) (*gatewebhook.Metrics, error) {
	m := gatewebhook.NewMetrics()
	if err := m.Register(r); err != nil {
		return nil, fmt.Errorf("registering webhook metrics: %w", err)
	}
	return m, nil
}

// RunWebhook serves the scheduling-gate webhook at WebhookPath until ctx is done. It never
// talks to a registry. With KnownImagesConfigMap it watches that ConfigMap and the placement
// configurations, to place pods at admission. Readiness (/readyz, and the Ready callback) means
// the TLS listener accepts connections and those informers have synced.
func RunWebhook(ctx context.Context, cfg *rest.Config, opts WebhookOptions) error {
	opts, restCfg, err := start(ctx, cfg, opts, "webhook")
	if err != nil {
		return err
	}
	atAdmission := newAdmissionPlacement(opts)
	mopts := opts.managerOptions()
	mopts.Cache = atAdmission.cacheOptions()
	mopts.WebhookServer = webhook.NewServer(webhook.Options{
		Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir, CertName: TLSCertName, KeyName: TLSKeyName,
		TLSOpts: opts.tlsOpts(),
	})
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return fmt.Errorf("creating the webhook manager: %w", err)
	}
	metrics, err := newWebhookMetrics(opts.registerer())
	if err != nil {
		return err
	}
	hopts, err := atAdmission.setUp(ctx, mgr, gatewebhook.Options{OperatorNamespace: opts.OperatorNamespace, Metrics: metrics,
		MaxImagesPerPod: opts.MaxImagesPerPod})
	if err != nil {
		return err
	}
	handler := gatewebhook.NewSchedulingGate(mgr.GetScheme(), hopts)
	log := opts.Logger.WithName("gate-pods")
	server := mgr.GetWebhookServer()
	server.Register(WebhookPath, &admission.Webhook{
		Handler: handler,
		LogConstructor: func(_ logr.Logger, req *admission.Request) logr.Logger {
			if req == nil {
				return log
			}
			return log.WithValues("namespace", req.Namespace, "name", req.Name, "uid", req.UID)
		},
	})
	started := server.StartedChecker()
	ready := func() error { return errors.Join(started(&http.Request{}), atAdmission.ready(mgr)) }
	if err := addProbes(mgr, probes{check: ready, onReady: opts.Ready}); err != nil {
		return err
	}
	log.Info("Starting the scheduling-gate webhook", "port", opts.Port, "path", WebhookPath,
		"admissionPlacement", opts.KnownImagesConfigMap != "")
	return mgr.Start(ctx)
}

// WebhookConfigurationOptions describe the MutatingWebhookConfiguration to build.
type WebhookConfigurationOptions = gatewebhook.ConfigurationOptions

// MutatingWebhookConfiguration returns the configuration that registers the scheduling-gate
// webhook (webhook.Configuration, next to the handler), for the simulator and the operator's
// placement tests, which cannot import internal packages.
func MutatingWebhookConfiguration(o WebhookConfigurationOptions) *admissionregistrationv1.MutatingWebhookConfiguration {
	return gatewebhook.Configuration(o)
}

// AdmissionPolicyOptions describe the MutatingAdmissionPolicy that places pods in the apiserver.
type AdmissionPolicyOptions = admissionpolicy.Options

// AdmissionPolicy returns the policy and its binding as the operator renders them (package
// admissionpolicy), for the simulator and the placement tests.
func AdmissionPolicy(o AdmissionPolicyOptions) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	return admissionpolicy.Policy(o), admissionpolicy.Binding(o)
}

// AdmissionPolicyWeights returns the cluster's nodeAffinityScoring weights as the admission
// policy compiles them, a CEL map from architecture to weight, and the architectures in the
// order it applies them, a CEL list; AdmissionPolicyImagesExpression is the CEL list of a pod's
// distinct images the policy reads and records, AdmissionPolicyMapsPatch how it sets labels and
// annotations, and AdmissionPolicyObject, AdmissionPolicyRequirement and
// AdmissionPolicyPreferredTerm how it writes the node affinity's parts. The simulator's floor
// policy writes archgate's placement with them.
func AdmissionPolicyWeights(spec *v1beta1.ClusterPodPlacementConfigSpec) (weights, order string) {
	weights, archs := admissionpolicy.ClusterWeights(spec)
	return weights, admissionpolicy.List(archs)
}

// AdmissionPolicyImagesExpression: see AdmissionPolicyWeights.
const AdmissionPolicyImagesExpression = admissionpolicy.ImagesExpression

// AdmissionPolicyMapsPatch: see AdmissionPolicyWeights.
func AdmissionPolicyMapsPatch(field string, entries map[string]string) string {
	return admissionpolicy.MapsPatch(field, entries)
}

// AdmissionPolicyObject: see AdmissionPolicyWeights.
func AdmissionPolicyObject(fields ...string) string { return admissionpolicy.Object(fields...) }

// AdmissionPolicyRequirement: see AdmissionPolicyWeights.
func AdmissionPolicyRequirement(key, values string) string {
	return admissionpolicy.NodeSelectorRequirement(key, values)
}

// AdmissionPolicyPreferredTerm: see AdmissionPolicyWeights.
func AdmissionPolicyPreferredTerm(weight, requirement string) string {
	return admissionpolicy.PreferredTerm(weight, requirement)
}

// AdmissionPolicyServed reports whether the apiserver behind mapper serves the admission
// policy's API.
func AdmissionPolicyServed(mapper meta.RESTMapper) (bool, error) {
	return admissionpolicy.Served(mapper)
}

// AdmissionPolicyWanted reports whether spec asks for the admission policy and, if not, why.
func AdmissionPolicyWanted(spec *v1beta1.ClusterPodPlacementConfigSpec) (bool, string) {
	return admissionpolicy.Wanted(spec)
}
