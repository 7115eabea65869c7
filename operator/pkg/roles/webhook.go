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

package roles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	gatewebhook "github.com/archgate/archgate/operator/internal/webhook"
)

// Webhook defaults and well-known values.
const (
	// WebhookPath is the HTTP path the scheduling-gate webhook serves.
	WebhookPath = "/gate-pods"
	// WebhookName is the name of the webhook inside the MutatingWebhookConfiguration.
	WebhookName = "scheduling-gate.multiarch.openshift.io"
	// WebhookTimeoutSeconds is how long the apiserver waits for the webhook. The handler decides
	// in microseconds; a slow answer means the webhook is unhealthy, and with failurePolicy
	// Ignore the pod is then admitted ungated rather than delaying every pod creation.
	WebhookTimeoutSeconds = 5
	// DefaultWebhookPort is the port the webhook listens on when WebhookOptions.Port is zero.
	DefaultWebhookPort = 9443
	// DefaultWebhookCertDir is where the serving certificate is read from when
	// WebhookOptions.CertDir is empty (controller-runtime's default).
	DefaultWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// TLSCertName and TLSKeyName are the files of the serving certificate in the cert directory
	// (the keys of a kubernetes.io/tls secret).
	TLSCertName = "tls.crt"
	TLSKeyName  = "tls.key"
	// metadataNameLabel is the label the apiserver sets on every namespace to its name.
	metadataNameLabel = "kubernetes.io/metadata.name"
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
}

func (o WebhookOptions) withDefaults(ctx context.Context) (WebhookOptions, error) {
	var err error
	o.Common, err = o.Common.withDefaults(ctx)
	o.Port = cmp.Or(o.Port, DefaultWebhookPort)
	o.CertDir = cmp.Or(o.CertDir, DefaultWebhookCertDir)
	return o, err
}

// RunWebhook serves the scheduling-gate webhook at WebhookPath until ctx is done. It never
// talks to a registry. With KnownImagesConfigMap it watches that ConfigMap and the placement
// configurations, to place pods at admission. Readiness (/readyz, and the Ready callback) means
// the TLS listener accepts connections and those informers have synced.
func RunWebhook(ctx context.Context, cfg *rest.Config, opts WebhookOptions) error {
	opts, err := opts.withDefaults(ctx)
	if err != nil {
		return err
	}
	restCfg, err := opts.restConfig(cfg)
	if err != nil {
		return err
	}
	atAdmission := newAdmissionPlacement(opts)
	mopts := opts.managerOptions()
	mopts.Cache = atAdmission.cacheOptions()
	mopts.WebhookServer = webhook.NewServer(webhook.Options{
		Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir, CertName: TLSCertName, KeyName: TLSKeyName,
	})
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return fmt.Errorf("creating the webhook manager: %w", err)
	}
	metrics := gatewebhook.NewMetrics()
	if err := metrics.Register(replacingRegisterer{opts.Registerer}); err != nil {
		return fmt.Errorf("registering webhook metrics: %w", err)
	}
	hopts, err := atAdmission.setUp(ctx, mgr, gatewebhook.Options{OperatorNamespace: opts.OperatorNamespace, Metrics: metrics})
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
	if err := addProbes(mgr, ready, opts.Ready, false); err != nil {
		return err
	}
	log.Info("Starting the scheduling-gate webhook", "port", opts.Port, "path", WebhookPath,
		"admissionPlacement", opts.KnownImagesConfigMap != "")
	return mgr.Start(ctx)
}

// MutatingWebhookConfiguration returns the configuration that registers the scheduling-gate
// webhook with the apiserver, named name:
//
//   - pods, CREATE only, failurePolicy Ignore (a webhook outage admits pods ungated, it never
//     blocks them), sideEffects None, timeoutSeconds WebhookTimeoutSeconds, reinvocation Never;
//   - clientConfig is a Service or a URL; a Service without a path gets WebhookPath; caBundle,
//     when not empty, replaces clientConfig.caBundle;
//   - namespaceSelector is the user's selector (nil selects every namespace) ANDed with
//     "kubernetes.io/metadata.name NotIn [operatorNamespace, kube-system, kube-public,
//     kube-node-lease]". Label selectors cannot match name prefixes, so the kube-*,
//     openshift-* and hypershift-* globs are excluded by a CEL match condition instead: the
//     apiserver does not even call the webhook for them (the handler checks again).
func MutatingWebhookConfiguration(name string, clientConfig admissionregistrationv1.WebhookClientConfig, caBundle []byte,
	namespaceSelector *metav1.LabelSelector, operatorNamespace string) *admissionregistrationv1.MutatingWebhookConfiguration {
	cc := *clientConfig.DeepCopy()
	if len(caBundle) > 0 {
		cc.CABundle = slices.Clone(caBundle)
	}
	if cc.Service != nil && cc.Service.Path == nil {
		cc.Service.Path = ptr.To(WebhookPath)
	}

	selector := namespaceSelector.DeepCopy()
	if selector == nil {
		selector = &metav1.LabelSelector{}
	}
	excluded := []string{"kube-node-lease", "kube-public", "kube-system"}
	if operatorNamespace != "" && !slices.Contains(excluded, operatorNamespace) {
		excluded = append(excluded, operatorNamespace)
		slices.Sort(excluded)
	}
	selector.MatchExpressions = append(selector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: metadataNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: excluded,
	})

	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{corev1.GroupName},
					APIVersions: []string{"v1"},
					Resources:   []string{"pods"},
					Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       selector,
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](WebhookTimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "not-in-reserved-namespace",
				Expression: reservedNamespaceCondition(),
			}},
		}},
	}
}

// reservedNamespaceCondition is the CEL expression that is false for the reserved namespace
// prefixes: !(request.namespace.startsWith('kube-') || ...).
func reservedNamespaceCondition() string {
	var terms []string
	for _, p := range v1beta1.ReservedNamespacePrefixes() {
		terms = append(terms, fmt.Sprintf("request.namespace.startsWith('%s')", p))
	}
	return "!(" + strings.Join(terms, " || ") + ")"
}
