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
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// deploymentState is what the operator needs to know about one component's Deployment.
type deploymentState struct {
	// key is "<namespace>/<name>", for messages.
	key string
	// found is false when the Deployment does not exist (yet).
	found bool
	// available mirrors the Deployment's Available condition: enough replicas serve.
	available bool
	// rolledOut is true when the latest spec runs on every replica and nothing else runs.
	rolledOut bool
	// failure is set when the Deployment controller gave up (ProgressDeadlineExceeded) or
	// cannot create pods (ReplicaFailure).
	failure                                      string
	replicas, availableReplicas, updatedReplicas int32
}

// observeDeployment reads d (nil when it does not exist) the way seed 002's Deployment builder
// does: the rollout is done when the observed generation caught up, every replica runs the
// latest template and none is unavailable.
func observeDeployment(key string, d *appsv1.Deployment) deploymentState {
	s := deploymentState{key: key}
	if d == nil {
		return s
	}
	s.found = true
	s.replicas = ptr.Deref(d.Spec.Replicas, 1)
	s.availableReplicas = d.Status.AvailableReplicas
	s.updatedReplicas = d.Status.UpdatedReplicas
	for _, c := range d.Status.Conditions {
		switch c.Type {
		case appsv1.DeploymentAvailable:
			s.available = c.Status == corev1.ConditionTrue
		case appsv1.DeploymentProgressing:
			if c.Status == corev1.ConditionFalse {
				s.failure = c.Reason + ": " + c.Message
			}
		case appsv1.DeploymentReplicaFailure:
			if c.Status == corev1.ConditionTrue {
				s.failure = c.Reason + ": " + c.Message
			}
		}
	}
	s.available = s.available && d.Status.AvailableReplicas > 0
	s.rolledOut = d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == s.replicas &&
		d.Status.Replicas == s.replicas &&
		d.Status.AvailableReplicas == s.replicas &&
		d.Status.UnavailableReplicas == 0
	return s
}

// serving reports whether at least one replica is available: enough for the webhook to answer
// admission calls and for the controller's leader to place and release pods. Fail-open keys on
// it, not on the Deployment's Available condition, which a missing standby already turns False.
func (s deploymentState) serving() bool { return s.availableReplicas > 0 }

// describe says where the Deployment stands, for condition messages.
func (s deploymentState) describe() string {
	if !s.found {
		return "Deployment " + s.key + " does not exist yet"
	}
	msg := fmt.Sprintf("Deployment %s has %d of %d replicas available, %d up to date", s.key, s.availableReplicas, s.replicas, s.updatedReplicas)
	if s.failure != "" {
		msg += " (" + s.failure + ")"
	}
	return msg
}

// missingLink is a linked object that does not exist or cannot be used.
type missingLink struct {
	reason  string
	message string
}

// releaseProgress is how far the release of gated pods got during a deletion.
type releaseProgress struct {
	released  int // pods released by the operator so far in this pass
	remaining int // gated pods seen and not released yet
	errs      []error
	phase     string // what the deletion is doing now
}

// observation is everything the status conditions are computed from.
type observation struct {
	deleting bool
	// missing lists the linked objects that do not exist; configured says whether any is set.
	missing    []missingLink
	configured []string
	// mirrorSetProblems name the mirror set entries left out (the rest applies).
	mirrorSetProblems []string
	// applyErr is the error that stopped the rollout, if any.
	applyErr error
	// waiting says which step blocks the rollout and on what; "" when every step is ready.
	waiting string
	// webhook and controller are the components' Deployments.
	webhook, controller deploymentState
	// registered is true when the MutatingWebhookConfiguration is in place.
	registered bool
	// webhookConfigurationName names the MutatingWebhookConfiguration, for messages.
	webhookConfigurationName string
	// release is set while deleting.
	release *releaseProgress
	// policy is what the admission policy step found.
	policy policyState
}

// condition is a condition without its bookkeeping fields.
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// conditions computes every condition of the status from the observation and the previous
// conditions (Degraded remembers that the components were available before).
func conditions(prev []metav1.Condition, o observation) map[string]condition {
	return map[string]condition{
		v1beta1.ConditionLinkedObjectsExist:      linkedObjectsCondition(o),
		v1beta1.ConditionAvailable:               availableCondition(o),
		v1beta1.ConditionProgressing:             progressingCondition(o),
		v1beta1.ConditionDegraded:                degradedCondition(prev, o),
		v1beta1.ConditionDeprovisioning:          deprovisioningCondition(o),
		v1beta1.ConditionAdmissionPolicyInEffect: policyCondition(o),
	}
}

func linkedObjectsCondition(o observation) condition {
	if len(o.missing) > 0 {
		msgs := make([]string, 0, len(o.missing))
		for _, m := range o.missing {
			msgs = append(msgs, m.message)
		}
		return condition{metav1.ConditionFalse, o.missing[0].reason, strings.Join(msgs, "; ")}
	}
	if len(o.configured) == 0 {
		return condition{metav1.ConditionTrue, v1beta1.ReasonAsExpected, "the spec references no pull secret and no CA bundle"}
	}
	return condition{metav1.ConditionTrue, v1beta1.ReasonAsExpected, strings.Join(o.configured, " and ") + " exist"}
}

func unavailable(o observation) []string {
	var out []string
	for _, d := range []deploymentState{o.webhook, o.controller} {
		if !d.available {
			out = append(out, d.describe())
		}
	}
	return out
}

func availableCondition(o observation) condition {
	if o.deleting {
		return condition{metav1.ConditionFalse, v1beta1.ReasonReleasingGatedPods,
			"the ClusterPodPlacementConfig is being deleted: new pods are no longer gated"}
	}
	down := unavailable(o)
	switch {
	case len(down) == 0 && o.registered:
		return condition{metav1.ConditionTrue, v1beta1.ReasonAllComponentsReady, fmt.Sprintf(
			"the webhook (%d/%d) and the pod placement controller (%d/%d) are available and the MutatingWebhookConfiguration %s is registered",
			o.webhook.availableReplicas, o.webhook.replicas, o.controller.availableReplicas, o.controller.replicas, o.webhookConfigurationName)}
	case len(down) == 0:
		return condition{metav1.ConditionFalse, v1beta1.ReasonComponentsUnavailable, fmt.Sprintf(
			"the MutatingWebhookConfiguration %s is not registered yet: new pods are not gated", o.webhookConfigurationName)}
	default:
		return condition{metav1.ConditionFalse, v1beta1.ReasonComponentsUnavailable,
			strings.Join(down, "; ") + ": new pods are not gated until both components are available"}
	}
}

func progressingCondition(o observation) condition {
	switch {
	case o.deleting:
		return condition{metav1.ConditionFalse, v1beta1.ReasonReleasingGatedPods, "the components are being removed, see Deprovisioning"}
	case o.applyErr != nil:
		return condition{metav1.ConditionTrue, v1beta1.ReasonRollingOut, "the rollout is blocked, see Degraded"}
	case o.waiting != "":
		return condition{metav1.ConditionTrue, v1beta1.ReasonRollingOut, "waiting for " + o.waiting}
	}
	var rolling []string
	for _, d := range []deploymentState{o.webhook, o.controller} {
		if !d.rolledOut {
			rolling = append(rolling, d.describe())
		}
	}
	if len(rolling) > 0 {
		return condition{metav1.ConditionTrue, v1beta1.ReasonRollingOut, strings.Join(rolling, "; ")}
	}
	return condition{metav1.ConditionFalse, v1beta1.ReasonAsExpected, "every component runs the latest configuration"}
}

func degradedCondition(prev []metav1.Condition, o observation) condition {
	if o.applyErr != nil {
		return condition{metav1.ConditionTrue, v1beta1.ReasonApplyFailed, o.applyErr.Error()}
	}
	if o.deleting {
		if o.release != nil && len(o.release.errs) > 0 {
			return condition{metav1.ConditionTrue, v1beta1.ReasonReleaseFailed, fmt.Sprintf(
				"%d gated pods could not be released yet (%v); the operator keeps retrying, `archgate ungate --all-namespaces --dry-run=false` releases them by hand",
				o.release.remaining, errors.Join(o.release.errs...))}
		}
		return condition{metav1.ConditionFalse, v1beta1.ReasonAsExpected, "deprovisioning"}
	}
	if len(o.missing) > 0 {
		return condition{metav1.ConditionTrue, o.missing[0].reason, linkedObjectsCondition(o).message}
	}
	var failed []string
	for _, d := range []deploymentState{o.webhook, o.controller} {
		if d.found && d.failure != "" && !d.available {
			failed = append(failed, d.describe())
		}
	}
	if len(failed) > 0 {
		return condition{metav1.ConditionTrue, v1beta1.ReasonComponentsUnavailable, strings.Join(failed, "; ") +
			": check the Deployment's events and pods (image pull, scheduling, crash loop)"}
	}
	down := unavailable(o)
	wasUp := meta.IsStatusConditionTrue(prev, v1beta1.ConditionAvailable)
	if d := meta.FindStatusCondition(prev, v1beta1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue && d.Reason == v1beta1.ReasonWebhookUnregistered {
		wasUp = true
	}
	if len(down) > 0 && wasUp {
		return condition{metav1.ConditionTrue, v1beta1.ReasonWebhookUnregistered, strings.Join(down, "; ") + fmt.Sprintf(
			": the MutatingWebhookConfiguration %s was removed so that pod creation does not wait on a missing webhook (fail open); "+
				"new pods are not gated until both components are available again. Check the Deployments' pods and events",
			o.webhookConfigurationName)}
	}
	if len(o.mirrorSetProblems) > 0 {
		return condition{metav1.ConditionTrue, v1beta1.ReasonRegistryConfigInvalid, "mirror set entries left out, the rest applies: " +
			strings.Join(o.mirrorSetProblems, "; ")}
	}
	return condition{metav1.ConditionFalse, v1beta1.ReasonAsExpected, "the components serve as configured"}
}

func deprovisioningCondition(o observation) condition {
	if !o.deleting {
		return condition{metav1.ConditionFalse, v1beta1.ReasonAsExpected, "the components are installed"}
	}
	msg := "removing the MutatingWebhookConfiguration, releasing gated pods, then deleting the components"
	if o.release != nil {
		msg = fmt.Sprintf("%s: %d gated pods released in the last pass, %d left", o.release.phase, o.release.released, o.release.remaining)
	}
	return condition{metav1.ConditionTrue, v1beta1.ReasonReleasingGatedPods, msg}
}

// setConditions writes the computed conditions into the status, keeping transition times of
// unchanged statuses, and records the generation they describe.
func setConditions(status *v1beta1.ClusterPodPlacementConfigStatus, generation int64, computed map[string]condition) {
	for _, t := range []string{
		v1beta1.ConditionAvailable, v1beta1.ConditionProgressing, v1beta1.ConditionDegraded,
		v1beta1.ConditionDeprovisioning, v1beta1.ConditionLinkedObjectsExist, v1beta1.ConditionAdmissionPolicyInEffect,
	} {
		c := computed[t]
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: t, Status: c.status, Reason: c.reason, Message: truncate(c.message), ObservedGeneration: generation,
		})
	}
	status.ObservedGeneration = generation
}

// maxMessage keeps condition messages well under the apiserver's 32 KiB limit.
const maxMessage = 4096

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}
