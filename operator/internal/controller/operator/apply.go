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
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// namedApplyConfiguration is what client-go's typed apply configurations tell about their
// object, for error messages.
type namedApplyConfiguration interface {
	runtime.ApplyConfiguration
	GetKind() *string
	GetName() *string
	GetNamespace() *string
}

// apply server-side applies ac — a client-go typed apply configuration, which holds exactly
// the fields the operator means to own — with FieldOwner, forcing ownership of those fields.
// The server's answer (the whole object) is decoded back into ac.
func apply(ctx context.Context, c client.Client, ac namedApplyConfiguration) error {
	if err := c.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		key := ptr.Deref(ac.GetName(), "")
		if ns := ptr.Deref(ac.GetNamespace(), ""); ns != "" {
			key = ns + "/" + key
		}
		return fmt.Errorf("applying %s %s: %w", ptr.Deref(ac.GetKind(), "object"), key, err)
	}
	return nil
}

// applyUnstructured applies u, an object of a kind without typed apply configurations
// (cert-manager's), as it is: u must hold only the fields the operator owns. A non-nil owner
// becomes the controller owner reference.
func applyUnstructured(ctx context.Context, c client.Client, scheme *runtime.Scheme, owner *v1beta1.ClusterPodPlacementConfig, u *unstructured.Unstructured) error {
	if owner != nil {
		if err := controllerutil.SetControllerReference(owner, u, scheme); err != nil {
			return err
		}
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), describeKey(u), err)
	}
	return nil
}

// ownerApplyConfiguration is the controller owner reference to cppc.
func ownerApplyConfiguration(cppc *v1beta1.ClusterPodPlacementConfig, scheme *runtime.Scheme) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	refs, err := ownerReference(cppc, scheme)
	if err != nil {
		return nil, err
	}
	ref := refs[0]
	return metav1ac.OwnerReference().WithAPIVersion(ref.APIVersion).WithKind(ref.Kind).WithName(ref.Name).WithUID(ref.UID).
		WithController(ptr.Deref(ref.Controller, false)).WithBlockOwnerDeletion(ptr.Deref(ref.BlockOwnerDeletion, false)), nil
}

// appliedDeployment is the Deployment the server answered an apply with. The answer is the
// whole object (status included), decoded into the apply configuration; the status rules
// (observeDeployment) read the typed form.
func appliedDeployment(ac *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	raw, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{}
	return d, json.Unmarshal(raw, d)
}

// mutatingWebhookApplyConfiguration is mwc (built by webhook.Configuration, whose typed form
// the simulator and envtest install as it is) as an apply configuration. Every field of that
// object is set on purpose and admissionregistration's optional fields are omitempty or
// pointers, so the JSON form holds exactly the fields the builder set: nothing is claimed by
// accident (TestMutatingWebhookApplyConfigurationClaimsOnlyWhatIsSet checks it).
func mutatingWebhookApplyConfiguration(mwc *admissionregistrationv1.MutatingWebhookConfiguration) (*admissionregistrationv1ac.MutatingWebhookConfigurationApplyConfiguration, error) {
	raw, err := json.Marshal(mwc)
	if err != nil {
		return nil, err
	}
	ac := admissionregistrationv1ac.MutatingWebhookConfiguration(mwc.Name)
	if err := json.Unmarshal(raw, ac); err != nil {
		return nil, fmt.Errorf("MutatingWebhookConfiguration %s as an apply configuration: %w", mwc.Name, err)
	}
	return ac, nil
}

func describeKey(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
