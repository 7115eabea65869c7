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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// linkedState is what the spec's references to other objects resolved to.
type linkedState struct {
	// pullSecret and caBundleRef are the referenced objects, nil when not configured.
	pullSecret, caBundleRef *types.NamespacedName
	// caBundle is the PEM content of the CA bundle ConfigMap's key.
	caBundle string
	// hash changes whenever the pull secret or the CA bundle changes; "" when none is configured.
	hash string
	// missing lists what does not exist; configured describes what does.
	missing    []missingLink
	configured []string
}

// resolveRef returns the object a reference names, defaulting the namespace to the operator's.
func resolveRef(ref *v1beta1.NamespacedObjectReference, namespace string) *types.NamespacedName {
	if ref == nil {
		return nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = namespace
	}
	return &types.NamespacedName{Namespace: ns, Name: ref.Name}
}

// lookupLinked reads the pull secret and the CA bundle the spec references. The secret's
// content never leaves this function: the hash covers its UID and resourceVersion, which
// change with every write, and the CA bundle's (public) content.
func lookupLinked(ctx context.Context, reader client.Reader, spec *v1beta1.ClusterPodPlacementConfigSpec, namespace string) (linkedState, error) {
	st := linkedState{
		pullSecret:  resolveRef(spec.GlobalPullSecretRef, namespace),
		caBundleRef: resolveRef(spec.CABundleConfigmapRef, namespace),
	}
	h := sha256.New()
	if st.pullSecret != nil {
		secret := &corev1.Secret{}
		switch err := reader.Get(ctx, *st.pullSecret, secret); {
		case apierrors.IsNotFound(err):
			st.missing = append(st.missing, missingLink{v1beta1.ReasonPullSecretNotFound, fmt.Sprintf(
				"Secret %s named by spec.globalPullSecretRef does not exist: create it or remove spec.globalPullSecretRef "+
					"(the components are not rolled out until then)", st.pullSecret)})
		case err != nil:
			return st, fmt.Errorf("reading Secret %s (spec.globalPullSecretRef): %w", st.pullSecret, err)
		default:
			st.configured = append(st.configured, fmt.Sprintf("Secret %s (globalPullSecretRef)", st.pullSecret))
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
	if st.pullSecret != nil || st.caBundleRef != nil {
		st.hash = hex.EncodeToString(h.Sum(nil))[:16]
	}
	return st, nil
}

// refersTo reports whether the spec references the object kind/key, so that a change to it
// re-runs the reconcile.
func refersTo(spec *v1beta1.ClusterPodPlacementConfigSpec, namespace, kind string, key types.NamespacedName) bool {
	var ref *types.NamespacedName
	switch kind {
	case "Secret":
		ref = resolveRef(spec.GlobalPullSecretRef, namespace)
	case "ConfigMap":
		ref = resolveRef(spec.CABundleConfigmapRef, namespace)
	}
	return ref != nil && *ref == key
}
