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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/credprovider"
	"github.com/archgate/archgate/operator/internal/inspect"
)

// linkedState is what the spec's references to other objects resolved to.
type linkedState struct {
	// pullSecret, caBundleRef, registriesConfRef and registryCertsRef are the referenced
	// objects, nil when not configured.
	pullSecret, caBundleRef, registriesConfRef, registryCertsRef *types.NamespacedName
	// caBundle is the PEM content of the CA bundle ConfigMap's key.
	caBundle string
	// registriesConf is the registries.conf content; registryCerts the per-registry PEM
	// certificates by ConfigMap key (host, ".." for ":").
	registriesConf string
	registryCerts  map[string]string
	// credentialProvidersRef names the CredentialProviderConfig ConfigMap and
	// credentialProviders holds its content; hostBinDir is the plugins' host directory and
	// hostFiles the host files their args name.
	credentialProvidersRef *types.NamespacedName
	credentialProviders    string
	hostBinDir             string
	hostFiles              []string
	// mirrorSets is the registries.conf drop-in rendered from the cluster's mirror sets, ""
	// when none applies; mirrorSetProblems name their entries left out, which Degraded
	// reports without holding the rollout (the rest of the sets applies).
	mirrorSets        string
	mirrorSetProblems []string
	// mirrorCredentials names the mirror credentials Secret (operator's namespace), nil when
	// not configured; its content stays in the Secret, which the controller mounts.
	mirrorCredentials *types.NamespacedName
	// hash changes whenever a linked object changes; "" when none is configured.
	hash string
	// missing lists what does not exist or cannot be used; configured describes what is used.
	missing    []missingLink
	configured []string
}

// lookupLinked reads the pull secret and the CA bundle the spec references. The secret's
// content never leaves this function: the hash covers its UID and resourceVersion, which
// change with every write, and the CA bundle's (public) content. Without globalPullSecretRef
// the platform's default pull secret (seed 004) is used when it exists; a referenced one must
// exist.
func lookupLinked(ctx context.Context, reader client.Reader, spec *v1beta1.ClusterPodPlacementConfigSpec, namespace string,
	platform v1beta1.Platform, sets mirrorSetObjects) (linkedState, error) {
	pullSecret, defaulted := spec.GlobalPullSecret(platform, namespace)
	st := linkedState{
		pullSecret:  &pullSecret,
		caBundleRef: spec.CABundleConfigmapRef.NamespacedName(namespace),
	}
	h := sha256.New()
	if st.pullSecret != nil {
		secret := &corev1.Secret{}
		switch err := reader.Get(ctx, *st.pullSecret, secret); {
		case apierrors.IsNotFound(err) && defaulted:
			// No global credentials: the default is a convenience, not a requirement.
			st.pullSecret = nil
		case apierrors.IsNotFound(err):
			st.missing = append(st.missing, missingLink{v1beta1.ReasonPullSecretNotFound, fmt.Sprintf(
				"Secret %s named by spec.globalPullSecretRef does not exist: create it or remove spec.globalPullSecretRef "+
					"(the components are not rolled out until then)", st.pullSecret)})
		case err != nil:
			return st, fmt.Errorf("reading Secret %s (spec.globalPullSecretRef): %w", st.pullSecret, err)
		default:
			source := "globalPullSecretRef"
			if defaulted {
				source = "default global pull secret, spec.globalPullSecretRef unset"
			}
			st.configured = append(st.configured, fmt.Sprintf("Secret %s (%s)", st.pullSecret, source))
			fmt.Fprintf(h, "secret %s %s %s\n", st.pullSecret, secret.UID, secret.ResourceVersion)
		}
	}
	if st.caBundleRef != nil {
		cm := &corev1.ConfigMap{}
		switch err := reader.Get(ctx, *st.caBundleRef, cm); {
		case apierrors.IsNotFound(err):
			st.missing = append(st.missing, missingLink{v1beta1.ReasonCABundleNotFound, fmt.Sprintf(
				"ConfigMap %s named by spec.caBundleConfigmapRef does not exist: create it with the key %q or remove "+
					"spec.caBundleConfigmapRef (the components are not rolled out until then)", st.caBundleRef, CABundleKey)})
		case err != nil:
			return st, fmt.Errorf("reading ConfigMap %s (spec.caBundleConfigmapRef): %w", st.caBundleRef, err)
		case cm.Data[CABundleKey] == "":
			st.missing = append(st.missing, missingLink{v1beta1.ReasonCABundleNotFound, fmt.Sprintf(
				"ConfigMap %s named by spec.caBundleConfigmapRef has no key %q: add the PEM certificates under that key",
				st.caBundleRef, CABundleKey)})
		default:
			st.caBundle = cm.Data[CABundleKey]
			st.configured = append(st.configured, fmt.Sprintf("ConfigMap %s (caBundleConfigmapRef)", st.caBundleRef))
			fmt.Fprintf(h, "ca-bundle %s ", st.caBundleRef)
			h.Write([]byte(st.caBundle))
		}
	}
	if st.caBundle != "" {
		if _, err := inspect.ParseCertificates([]byte(st.caBundle)); err != nil {
			st.invalid(fmt.Sprintf("ConfigMap %s named by spec.caBundleConfigmapRef, key %q: %v", st.caBundleRef, CABundleKey, err))
		}
	}
	if err := st.lookupRegistryConfig(ctx, reader, spec, namespace, h); err != nil {
		return st, err
	}
	if err := st.lookupCredentialProviders(ctx, reader, spec, namespace, h); err != nil {
		return st, err
	}
	if err := st.lookupMirrorCredentials(ctx, reader, spec, namespace, h); err != nil {
		return st, err
	}
	if err := st.renderMirrorSets(sets, h); err != nil {
		return st, err
	}
	if st.pullSecret != nil || st.caBundleRef != nil || st.registriesConfRef != nil || st.registryCertsRef != nil ||
		st.credentialProvidersRef != nil || st.mirrorCredentials != nil || st.mirrorSets != "" {
		st.hash = hex.EncodeToString(h.Sum(nil))[:16]
	}
	return st, nil
}

// invalid records a linked object that exists but cannot be used: the rollout holds, and
// Degraded says why, instead of a controller that crash-loops or fails every inspection.
func (st *linkedState) invalid(message string) {
	st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigInvalid,
		message + " (the controller is not rolled out with it until it is fixed)"})
}

// lookupRegistryConfig reads and validates registriesConfConfigmapRef and
// registryCertsConfigmapRef, with the same loaders the controller uses.
func (st *linkedState) lookupRegistryConfig(ctx context.Context, reader client.Reader, spec *v1beta1.ClusterPodPlacementConfigSpec, namespace string, h hash.Hash) error {
	st.registriesConfRef = spec.RegistriesConfConfigmapRef.NamespacedName(namespace)
	st.registryCertsRef = spec.RegistryCertsConfigmapRef.NamespacedName(namespace)
	get := func(key *types.NamespacedName, field string) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{}
		switch err := reader.Get(ctx, *key, cm); {
		case apierrors.IsNotFound(err):
			st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigNotFound, fmt.Sprintf(
				"ConfigMap %s named by spec.%s does not exist: create it or remove spec.%s "+
					"(the components are not rolled out until then)", key, field, field)})
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("reading ConfigMap %s (spec.%s): %w", key, field, err)
		}
		return cm, nil
	}
	if key := st.registriesConfRef; key != nil {
		cm, err := get(key, "registriesConfConfigmapRef")
		if err != nil || cm == nil {
			return err
		}
		content, ok := cm.Data[RegistriesConfKey]
		switch {
		case !ok:
			st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigNotFound, fmt.Sprintf(
				"ConfigMap %s named by spec.registriesConfConfigmapRef has no key %q: put the registries.conf content under that key",
				key, RegistriesConfKey)})
		default:
			if err := inspect.ValidateRegistriesConf([]byte(content)); err != nil {
				st.invalid(fmt.Sprintf("ConfigMap %s named by spec.registriesConfConfigmapRef, key %q: %v", key, RegistriesConfKey, err))
			}
			st.registriesConf = content
			st.configured = append(st.configured, fmt.Sprintf("ConfigMap %s (registriesConfConfigmapRef)", key))
			fmt.Fprintf(h, "registries-conf %s ", key)
			h.Write([]byte(content))
		}
	}
	if key := st.registryCertsRef; key != nil {
		cm, err := get(key, "registryCertsConfigmapRef")
		if err != nil || cm == nil {
			return err
		}
		if len(cm.Data) == 0 {
			st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigNotFound, fmt.Sprintf(
				"ConfigMap %s named by spec.registryCertsConfigmapRef has no data: add one key per registry "+
					"(host, \"..\" for \":\", e.g. \"registry.example..5000\") with its PEM CA certificates", key)})
			return nil
		}
		st.registryCerts = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			if _, err := certsDirHost(k); err != nil {
				st.invalid(fmt.Sprintf("ConfigMap %s named by spec.registryCertsConfigmapRef, key %q: %v", key, k, err))
				continue
			}
			if _, err := inspect.ParseCertificates([]byte(cm.Data[k])); err != nil {
				st.invalid(fmt.Sprintf("ConfigMap %s named by spec.registryCertsConfigmapRef, key %q: %v", key, k, err))
				continue
			}
			st.registryCerts[k] = cm.Data[k]
			fmt.Fprintf(h, "registry-cert %s %s ", key, k)
			h.Write([]byte(cm.Data[k]))
		}
		st.configured = append(st.configured, fmt.Sprintf("ConfigMap %s (registryCertsConfigmapRef)", key))
	}
	return nil
}

// lookupCredentialProviders reads imageInspection.credentialProviders' ConfigMap and validates
// its CredentialProviderConfig with the controller's own parser, so that a bad configuration
// holds the rollout with Degraded naming the object and the error, not a crash-looping controller.
func (st *linkedState) lookupCredentialProviders(ctx context.Context, reader client.Reader, spec *v1beta1.ClusterPodPlacementConfigSpec, namespace string, h hash.Hash) error {
	if spec.ImageInspection == nil || spec.ImageInspection.CredentialProviders == nil {
		return nil
	}
	cp := spec.ImageInspection.CredentialProviders
	const field = "imageInspection.credentialProviders.configConfigmapRef"
	key := cp.ConfigConfigmapRef.NamespacedName(namespace)
	st.credentialProvidersRef, st.hostBinDir = key, cp.HostBinDir
	for _, f := range cp.HostFiles {
		st.hostFiles = append(st.hostFiles, string(f))
	}
	cm := &corev1.ConfigMap{}
	switch err := reader.Get(ctx, *key, cm); {
	case apierrors.IsNotFound(err):
		st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigNotFound, fmt.Sprintf(
			"ConfigMap %s named by spec.%s does not exist: create it or remove spec.imageInspection.credentialProviders "+
				"(the components are not rolled out until then)", key, field)})
		return nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s (spec.%s): %w", key, field, err)
	}
	content, ok := cm.Data[v1beta1.CredentialProvidersConfigKey]
	if !ok {
		st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigNotFound, fmt.Sprintf(
			"ConfigMap %s named by spec.%s has no key %q: put the kubelet's CredentialProviderConfig under that key",
			key, field, v1beta1.CredentialProvidersConfigKey)})
		return nil
	}
	if _, err := credprovider.ParseConfig([]byte(content)); err != nil {
		st.invalid(fmt.Sprintf("ConfigMap %s named by spec.%s, key %q: %v", key, field, v1beta1.CredentialProvidersConfigKey, err))
	}
	st.credentialProviders = content
	st.configured = append(st.configured, fmt.Sprintf("ConfigMap %s (%s)", key, field))
	fmt.Fprintf(h, "credential-providers %s %s ", key, cp.HostBinDir)
	if len(st.hostFiles) > 0 {
		// Their paths, not their content: the operator cannot read the nodes' files, and the
		// plugins read them anew at every execution. Only when set, so that the hash of a
		// configuration without them stays what it was.
		fmt.Fprintf(h, "host-files %q ", st.hostFiles)
	}
	h.Write([]byte(content))
	return nil
}

// lookupMirrorCredentials reads imageInspection.mirrorCredentialsSecretRef and validates it
// with the pull-secret parser. Like the global pull secret's, its content never leaves this
// function and is never part of a message: the hash covers the Secret's UID and
// resourceVersion, so that a change rolls the controller out.
func (st *linkedState) lookupMirrorCredentials(ctx context.Context, reader client.Reader, spec *v1beta1.ClusterPodPlacementConfigSpec,
	namespace string, h hash.Hash) error {
	key := spec.MirrorCredentials(namespace)
	if key == nil {
		return nil
	}
	const field = "imageInspection.mirrorCredentialsSecretRef"
	secret := &corev1.Secret{}
	switch err := reader.Get(ctx, *key, secret); {
	case apierrors.IsNotFound(err):
		st.missing = append(st.missing, missingLink{v1beta1.ReasonRegistryConfigNotFound, fmt.Sprintf(
			"Secret %s named by spec.%s does not exist: create it in the operator's namespace or remove spec.%s "+
				"(the components are not rolled out until then)", key, field, field)})
		return nil
	case err != nil:
		return fmt.Errorf("reading Secret %s (spec.%s): %w", key, field, err)
	}
	if secret.Type != corev1.SecretTypeDockerConfigJson {
		st.invalid(fmt.Sprintf("Secret %s named by spec.%s has type %q, want %q", key, field, secret.Type, corev1.SecretTypeDockerConfigJson))
		return nil
	}
	if _, err := credentials.ParseDockerConfigJSON(credentials.Source{Namespace: key.Namespace, Name: key.Name},
		secret.Data[v1beta1.MirrorCredentialsKey]); err != nil {
		st.invalid(fmt.Sprintf("Secret %s named by spec.%s: %v", key, field, err))
		return nil
	}
	st.mirrorCredentials = key
	st.configured = append(st.configured, fmt.Sprintf("Secret %s (%s)", key, field))
	fmt.Fprintf(h, "mirror-credentials %s %s %s\n", key, secret.UID, secret.ResourceVersion)
	return nil
}

// certsDirHost returns the certs.d directory name (host[:port]) of a registryCertsConfigmapRef
// key: ConfigMap keys cannot hold ":", so ".." stands for it, as in OpenShift's
// image.config additionalTrustedCA.
func certsDirHost(key string) (string, error) {
	hostPort := strings.Replace(key, "..", ":", 1)
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host, port = hostPort, ""
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("port %q is not a number within [1, 65535]", port)
		}
	}
	if net.ParseIP(host) == nil {
		if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
			return "", fmt.Errorf("want a registry host, \"..\" before a port (\"registry.example..5000\"): %s", strings.Join(errs, "; "))
		}
	}
	return hostPort, nil
}

// refersTo reports whether the spec references the object kind/key, so that a change to it
// re-runs the reconcile.
func refersTo(spec *v1beta1.ClusterPodPlacementConfigSpec, namespace string, platform v1beta1.Platform, kind string, key types.NamespacedName) bool {
	var ref *types.NamespacedName
	switch kind {
	case "Secret":
		// The default pull secret too: creating it later rolls the controller with it.
		pullSecret, _ := spec.GlobalPullSecret(platform, namespace)
		ref = &pullSecret
		if m := spec.MirrorCredentials(namespace); m != nil && *m == key {
			return true
		}
	case "ConfigMap":
		refs := []*v1beta1.NamespacedObjectReference{spec.CABundleConfigmapRef, spec.RegistriesConfConfigmapRef, spec.RegistryCertsConfigmapRef}
		if spec.ImageInspection != nil && spec.ImageInspection.CredentialProviders != nil {
			refs = append(refs, &spec.ImageInspection.CredentialProviders.ConfigConfigmapRef)
		}
		for _, r := range refs {
			if ref := r.NamespacedName(namespace); ref != nil && *ref == key {
				return true
			}
		}
	}
	return ref != nil && *ref == key
}
