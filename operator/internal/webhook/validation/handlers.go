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

package validation

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placementconfig"
	"github.com/archgate/archgate/operator/internal/placementrules"
)

// PodPlacementConfigValidator admits PodPlacementConfig creations and updates.
type PodPlacementConfigValidator struct {
	reader  client.Reader
	decoder admission.Decoder
}

// ClusterPodPlacementConfigValidator admits ClusterPodPlacementConfig creations and updates
// (the platform's rules, which the CRD schema cannot know, and the placement rules' CEL) and
// deletions.
type ClusterPodPlacementConfigValidator struct {
	reader   client.Reader
	decoder  admission.Decoder
	platform v1beta1.Platform
	// rules compiles the placement rules' expressions, as the components evaluate them.
	rules *placementrules.Evaluator
}

var (
	_ admission.Handler = (*PodPlacementConfigValidator)(nil)
	_ admission.Handler = (*ClusterPodPlacementConfigValidator)(nil)
)

// NewPodPlacementConfigValidator returns the handler. reader should not be a cache: two
// configurations created in quick succession must see each other. scheme must know v1beta1.
func NewPodPlacementConfigValidator(reader client.Reader, scheme *runtime.Scheme) *PodPlacementConfigValidator {
	return &PodPlacementConfigValidator{reader: reader, decoder: admission.NewDecoder(scheme)}
}

// NewClusterPodPlacementConfigValidator returns the handler for a cluster of platform; see
// NewPodPlacementConfigValidator.
func NewClusterPodPlacementConfigValidator(reader client.Reader, scheme *runtime.Scheme, platform v1beta1.Platform) *ClusterPodPlacementConfigValidator {
	return &ClusterPodPlacementConfigValidator{reader: reader, decoder: admission.NewDecoder(scheme), platform: platform,
		rules: placementrules.New(placementrules.Options{})}
}

// Register serves both validators on server at PathPodPlacementConfig and
// PathClusterPodPlacementConfig.
func Register(server webhook.Server, reader client.Reader, scheme *runtime.Scheme, platform v1beta1.Platform) {
	server.Register(PathPodPlacementConfig, &webhook.Admission{Handler: NewPodPlacementConfigValidator(reader, scheme)})
	server.Register(PathClusterPodPlacementConfig, &webhook.Admission{Handler: NewClusterPodPlacementConfigValidator(reader, scheme, platform)})
}

// Handle validates one PodPlacementConfig request.
func (v *PodPlacementConfigValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	ppc := &v1beta1.PodPlacementConfig{}
	if err := v.decoder.Decode(req, ppc); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	st, err := v.state(ctx, ppc)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading placement configurations: %w", err))
	}
	var errs field.ErrorList
	if req.Operation == admissionv1.Create {
		errs = validateCreate(ppc, st)
	} else {
		old := &v1beta1.PodPlacementConfig{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		errs = validateUpdate(old, ppc, st)
	}
	return respond(ctx, "PodPlacementConfig", types.NamespacedName{Namespace: ppc.Namespace, Name: ppc.Name}, errs)
}

func (v *PodPlacementConfigValidator) state(ctx context.Context, ppc *v1beta1.PodPlacementConfig) (clusterState, error) {
	var st clusterState
	var err error
	if st.cluster, err = placementconfig.Cluster(ctx, v.reader); err != nil {
		return st, err
	}
	list := &v1beta1.PodPlacementConfigList{}
	if err := v.reader.List(ctx, list, client.InNamespace(ppc.Namespace)); err != nil {
		return st, err
	}
	for _, s := range list.Items {
		if s.Name != ppc.Name && s.DeletionTimestamp == nil {
			st.siblings = append(st.siblings, s)
		}
	}
	return st, nil
}

// Handle validates one ClusterPodPlacementConfig request.
func (v *ClusterPodPlacementConfigValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
		cppc := &v1beta1.ClusterPodPlacementConfig{}
		if err := v.decoder.Decode(req, cppc); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		var oldRules []v1beta1.PlacementRule
		if req.Operation == admissionv1.Update {
			old := &v1beta1.ClusterPodPlacementConfig{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, err)
			}
			oldRules = old.Spec.PlacementRules
		}
		spec := field.NewPath("spec")
		errs := append(cppc.Spec.ValidateForPlatform(v.platform, spec), cppc.Spec.Components.Validate(spec.Child("components"))...)
		errs = append(errs, v1beta1.ValidateArchitectureTaints(spec.Child("architectureTaints"), cppc.Spec.ArchitectureTaints)...)
		errs = append(errs, v.rules.Validate(spec.Child("placementRules"), cppc.Spec.PlacementRules, oldRules)...)
		return respond(ctx, "ClusterPodPlacementConfig", types.NamespacedName{Name: req.Name}, errs)
	case admissionv1.Delete:
	default:
		return admission.Allowed("")
	}
	list := &v1beta1.PodPlacementConfigList{}
	if err := v.reader.List(ctx, list); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("listing PodPlacementConfigs: %w", err))
	}
	var live []v1beta1.PodPlacementConfig
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	reason := deletionBlockers(live)
	if reason == "" {
		return admission.Allowed("")
	}
	msg := fmt.Sprintf("ClusterPodPlacementConfig %q cannot be deleted: %s", req.Name, reason)
	logf.FromContext(ctx).Info("Refused ClusterPodPlacementConfig deletion", "name", req.Name, "dependents", len(live))
	return deny(http.StatusConflict, metav1.StatusReasonConflict, msg, nil)
}

// respond turns field errors into an admission response: allowed when there are none,
// otherwise a 422 Invalid whose message starts with the kind and namespace/name of the object.
func respond(ctx context.Context, kind string, key types.NamespacedName, errs field.ErrorList) admission.Response {
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	name := key.Name
	if key.Namespace != "" {
		name = key.Namespace + "/" + key.Name
	}
	msg := fmt.Sprintf("%s %s is invalid: %s", kind, name, errs.ToAggregate().Error())
	causes := make([]metav1.StatusCause, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	logf.FromContext(ctx).Info("Refused object", "kind", kind, "object", name, "errors", len(errs))
	return deny(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
}

func deny(code int32, reason metav1.StatusReason, msg string, causes []metav1.StatusCause) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    code,
			Reason:  reason,
			Message: msg,
			Details: &metav1.StatusDetails{Causes: causes},
		},
	}}
}
