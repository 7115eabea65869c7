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

package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/webhook"
)

// checkLinkedObjects resolves globalPullSecretRef and caBundleConfigmapRef; the rollout waits
// while one of them is missing, so the controller never runs without the credentials or the
// trust the administrator asked for.
func (r *Reconciler) checkLinkedObjects(ctx context.Context, s *scope) (string, error) {
	sets, err := r.readMirrorSets(ctx)
	if err != nil {
		return "", err
	}
	linked, err := lookupLinked(ctx, r.uncached, &s.cppc.Spec, r.opts.Namespace, r.opts.Platform, sets)
	if err != nil {
		return "", err
	}
	s.linked = linked
	s.params.pullSecret = linked.pullSecret
	s.params.caBundle = linked.caBundleRef != nil
	s.params.registriesConf = linked.registriesConfRef != nil
	s.params.mirrorSets = linked.mirrorSets != ""
	s.params.registryCerts = slices.Sorted(maps.Keys(linked.registryCerts))
	if linked.credentialProvidersRef != nil {
		s.params.credentialProvidersHostBinDir = linked.hostBinDir
		s.params.credentialProvidersHostFiles = linked.hostFiles
	}
	if linked.mirrorCredentials != nil {
		s.params.mirrorCredentials = linked.mirrorCredentials.Name
	}
	s.params.linkedHash = linked.hash
	if len(linked.missing) > 0 {
		return linked.missing[0].message, nil
	}
	return "", nil
}

// applyIdentity applies the ServiceAccounts, the components' RBAC and the known-images
// ConfigMap, and removes the pull-secret Role of a previous globalPullSecretRef.
func (r *Reconciler) applyIdentity(ctx context.Context, s *scope) (string, error) {
	p := s.params
	objs := []namedApplyConfiguration{
		serviceAccount(p, WebhookComponentName),
		serviceAccount(p, ControllerComponentName),
		controllerClusterRole(p),
		clusterRoleBinding(p, ControllerComponentName),
		controllerRole(p),
		roleBinding(p, ControllerComponentName),
		webhookClusterRole(p),
		clusterRoleBinding(p, WebhookComponentName),
		webhookRole(p),
		roleBinding(p, WebhookComponentName),
		knownImagesConfigMap(p),
	}
	if p.admissionPolicy {
		objs = append(objs, placementParametersConfigMap(p))
	}
	for _, obj := range objs {
		if err := apply(ctx, r.client, obj); err != nil {
			return "", err
		}
	}
	if err := r.syncPodDeleterBinding(ctx, p); err != nil {
		return "", err
	}
	return "", r.prunePullSecretRBAC(ctx)
}

// syncPodDeleterBinding lets the controller delete pods while the exec-format-error monitor's
// action is DeletePod, and not otherwise.
func (r *Reconciler) syncPodDeleterBinding(ctx context.Context, p operandParams) error {
	if p.execFormatErrorDeleteInterval > 0 {
		return apply(ctx, r.client, controllerPodDeleterBinding(p))
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ControllerPodDeleterName}}
	if err := r.client.Delete(ctx, binding); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting ClusterRoleBinding %s: %w", ControllerPodDeleterName, err)
	}
	return nil
}

// prunePullSecretRBAC deletes the Roles and RoleBindings that let earlier versions' controller
// watch the global pull secret; the controller now reads it by name, with the get it holds.
func (r *Reconciler) prunePullSecretRBAC(ctx context.Context) error {
	var errs []error
	for _, list := range []client.ObjectList{&rbacv1.RoleBindingList{}, &rbacv1.RoleList{}} {
		if err := r.uncached.List(ctx, list, client.MatchingFields{"metadata.name": ControllerPullSecretRoleName},
			client.MatchingLabels{LabelManagedBy: ManagedBy}); err != nil {
			return fmt.Errorf("listing the controller's pull-secret RBAC: %w", err)
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if err := r.uncached.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting %T %s: %w", obj, describeKey(obj), err))
			}
			return nil
		})
	}
	return errors.Join(errs...)
}

// servingCert is a serving certificate the components need: its Secret, the Service whose
// names it covers, who issues it and, with cert-manager, the Certificate.
type servingCert struct {
	secret, service string
	provider        certs.Provider
	certificate     string
}

// servingCerts are the webhook's serving certificate (the configured provider) and the
// components' metrics certificates (its MetricsProvider: the operator's CA, or service-ca).
func (r *Reconciler) servingCerts() []servingCert {
	metrics := r.opts.CertProvider.MetricsProvider()
	return []servingCert{
		{secret: WebhookServingSecretName, service: WebhookComponentName, provider: r.opts.CertProvider, certificate: WebhookCertificateName},
		{secret: WebhookMetricsSecretName, service: WebhookMetricsServiceName, provider: metrics},
		{secret: ControllerMetricsSecretName, service: ControllerMetricsServiceName, provider: metrics},
	}
}

// applyServing applies the webhook Service and the metrics Services, makes sure their serving
// certificates exist (issued by their providers) and copies the registry CA bundle next to the
// controller.
func (r *Reconciler) applyServing(ctx context.Context, s *scope) (string, error) {
	p := s.params
	for _, svc := range []namedApplyConfiguration{webhookService(p),
		metricsService(p, WebhookComponentName, WebhookMetricsSecretName), metricsService(p, ControllerComponentName, ControllerMetricsSecretName)} {
		if err := apply(ctx, r.client, svc); err != nil {
			return "", err
		}
	}
	if err := r.syncRegistryCABundle(ctx, s); err != nil {
		return "", err
	}
	var ca *certs.CA
	var external []string // Secrets cert-manager or service-ca write on their own time
	for _, c := range r.servingCerts() {
		dnsNames := certs.ServiceDNSNames(r.opts.Namespace, c.service)
		switch c.provider {
		case certs.ProviderSelfSigned:
			if ca == nil {
				issuer, err := r.opts.Certs.EnsureCA(ctx)
				if err != nil {
					return "", err
				}
				ca = &issuer
				s.requeueIn(time.Until(ca.RenewAt))
			}
			owner, err := ownerReference(s.cppc, r.scheme)
			if err != nil {
				return "", err
			}
			renewAt, err := r.opts.Certs.EnsureServing(ctx, *ca, certs.ServingSecret{Name: c.secret, DNSNames: dnsNames, OwnerReferences: owner})
			if err != nil {
				return "", err
			}
			s.requeueIn(time.Until(renewAt))
			if c.secret == WebhookServingSecretName {
				s.caBundle = ca.Bundle
			}
		case certs.ProviderCertManager:
			for _, u := range []*unstructured.Unstructured{
				certs.CertManagerIssuer(r.opts.Namespace, certs.DefaultIssuerName),
				certs.CertManagerCertificate(r.opts.Namespace, c.certificate, c.secret, certs.DefaultIssuerName, dnsNames),
			} {
				if err := applyUnstructured(ctx, r.client, r.scheme, ownerFor(u, s), u); err != nil {
					return "", fmt.Errorf("%w (is cert-manager installed?)", err)
				}
			}
			external = append(external, c.secret)
		default:
			external = append(external, c.secret)
		}
	}
	for _, name := range external {
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: r.opts.Namespace, Name: name}
		switch err := r.uncached.Get(ctx, key, secret); {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("%s to write the serving certificate into Secret %s", r.opts.CertProvider, key), nil
		case err != nil:
			return "", err
		case len(secret.Data[corev1.TLSCertKey]) == 0 || len(secret.Data[corev1.TLSPrivateKeyKey]) == 0:
			return fmt.Sprintf("%s to fill in Secret %s", r.opts.CertProvider, key), nil
		}
	}
	return "", nil
}

// ownerFor returns the owner of an object the operator creates: the Issuer is shared with the
// operator's own certificate and outlives the ClusterPodPlacementConfig.
func ownerFor(obj client.Object, s *scope) *v1beta1.ClusterPodPlacementConfig {
	if obj.GetObjectKind().GroupVersionKind() == certs.IssuerGVK {
		return nil
	}
	return s.cppc
}

// syncRegistryCABundle keeps the operator's copies of the linked ConfigMaps (CA bundle,
// registries.conf, per-registry certificates) in step with the referenced ones, and deletes a
// copy when its reference is removed.
func (r *Reconciler) syncRegistryCABundle(ctx context.Context, s *scope) error {
	for _, c := range []struct {
		name string
		data map[string]string // nil: not configured
	}{
		{RegistryCABundleName, dataIf(s.linked.caBundleRef != nil, map[string]string{CABundleKey: s.linked.caBundle})},
		{RegistriesConfName, registriesConfData(s.linked)},
		{RegistryCertsName, dataIf(len(s.linked.registryCerts) > 0, s.linked.registryCerts)},
		{CredentialProvidersName, dataIf(s.linked.credentialProvidersRef != nil,
			map[string]string{v1beta1.CredentialProvidersConfigKey: s.linked.credentialProviders})},
	} {
		if c.data == nil {
			cm := &corev1.ConfigMap{}
			cm.Namespace, cm.Name = r.opts.Namespace, c.name
			if err := r.uncached.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
			}
			continue
		}
		if err := apply(ctx, r.uncached, linkedCopy(s.params, c.name, c.data)); err != nil {
			return err
		}
	}
	return nil
}

// registriesConfData is RegistriesConfName's content: the referenced registries.conf and the
// mirror sets' drop-in, each when there is one; nil (no ConfigMap) when neither is.
func registriesConfData(l linkedState) map[string]string {
	data := map[string]string{}
	if l.registriesConfRef != nil {
		data[RegistriesConfKey] = l.registriesConf
	}
	if l.mirrorSets != "" {
		data[MirrorSetsKey] = l.mirrorSets
	}
	return dataIf(len(data) > 0, data)
}

func dataIf(ok bool, data map[string]string) map[string]string {
	if !ok {
		return nil
	}
	return data
}

// applyDeployments applies both Deployments and their disruption budgets and waits until both
// are Available. A new template (arguments, image, linked objects) rolls the pods; the
// rollout's progress is reported by Progressing, not waited for here, so that a rolling update
// keeps the webhook registered.
func (r *Reconciler) applyDeployments(ctx context.Context, s *scope) (string, error) {
	p := s.params
	for _, pdb := range []namedApplyConfiguration{podDisruptionBudget(p, WebhookComponentName), podDisruptionBudget(p, ControllerComponentName)} {
		if err := apply(ctx, r.client, pdb); err != nil {
			return "", err
		}
	}
	var applied []*appsv1.Deployment
	for _, ac := range []*appsv1ac.DeploymentApplyConfiguration{webhookDeployment(p), controllerDeployment(p)} {
		if err := apply(ctx, r.client, ac); err != nil {
			return "", err
		}
		d, err := appliedDeployment(ac)
		if err != nil {
			return "", err
		}
		applied = append(applied, d)
	}
	wh, ctl := applied[0], applied[1]
	s.obs.webhook = observeDeployment(describeKey(wh), wh)
	s.obs.controller = observeDeployment(describeKey(ctl), ctl)
	var waiting []string
	for _, d := range []deploymentState{s.obs.webhook, s.obs.controller} {
		if !d.available {
			waiting = append(waiting, d.describe())
		}
	}
	if len(waiting) > 0 {
		return strings.Join(waiting, "; "), nil
	}
	return "", nil
}

// registerWebhook applies the MutatingWebhookConfiguration; it runs only once both
// Deployments are Available.
func (r *Reconciler) registerWebhook(ctx context.Context, s *scope) (string, error) {
	mwc := webhook.Configuration(webhook.ConfigurationOptions{
		Name: r.opts.MutatingWebhookConfigurationName,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: r.opts.Namespace, Name: WebhookComponentName, Port: ptr.To[int32](443)},
		},
		CABundle:          s.caBundle,
		NamespaceSelector: s.cppc.Spec.NamespaceSelector,
		OperatorNamespace: r.opts.Namespace,
		PolicyInEffect:    s.params.admissionPolicy,
	})
	mwc.Labels = maps.Clone(ManagedLabels(WebhookComponentName))
	if a := certs.WebhookConfigurationAnnotations(r.opts.CertProvider, r.opts.Namespace+"/"+WebhookCertificateName); a != nil {
		if mwc.Annotations == nil {
			mwc.Annotations = map[string]string{}
		}
		maps.Copy(mwc.Annotations, a)
	}
	ac, err := mutatingWebhookApplyConfiguration(mwc)
	if err != nil {
		return "", err
	}
	if err := apply(ctx, r.client, ac.WithOwnerReferences(s.params.owners()...)); err != nil {
		return "", err
	}
	s.obs.registered = true
	return "", nil
}

// ownerReference returns the controller owner reference to the ClusterPodPlacementConfig.
func ownerReference(cppc *v1beta1.ClusterPodPlacementConfig, scheme *runtime.Scheme) ([]metav1.OwnerReference, error) {
	probe := &metav1.ObjectMeta{}
	if err := controllerutil.SetControllerReference(cppc, probe, scheme); err != nil {
		return nil, err
	}
	return probe.OwnerReferences, nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
