package kubelet

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// writeStatus writes the Deployment's status as the Deployment controller
// would from the replicas that run: Available when no more replicas are
// unavailable than the rolling update allows.
func (k *Kubelet) writeStatus(ctx context.Context, d *appsv1.Deployment, hash string) error {
	k.mu.Lock()
	var running, updated int32
	for _, p := range k.pods[d.Name] {
		if p.terminating {
			continue
		}
		running++ // started means ready: startPod waits for the readiness probe
		if p.hash == hash {
			updated++
		}
	}
	k.mu.Unlock()
	st := deploymentStatus(d, running, updated)
	if apiequality.Semantic.DeepEqual(withoutTimes(st), withoutTimes(d.Status)) {
		return nil
	}
	out := d.DeepCopy()
	out.Status = st
	_, err := k.opts.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // the operator changed the Deployment; the event brings it back to the next pass
	}
	return err
}

// deploymentStatus is the status of d with running ready replicas, updated
// of them from the current template; a pure rule.
func deploymentStatus(d *appsv1.Deployment, running, updated int32) appsv1.DeploymentStatus {
	desired := derefReplicas(d)
	maxUnavailable := intstr.FromString("25%")
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	allowed, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, int(desired), false)
	if err != nil {
		allowed = 0
	}
	available := corev1.ConditionFalse
	reason := "MinimumReplicasUnavailable"
	if running >= desired-int32(allowed) {
		available, reason = corev1.ConditionTrue, "MinimumReplicasAvailable"
	}
	now := metav1.Now()
	return appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            running,
		UpdatedReplicas:     updated,
		ReadyReplicas:       running,
		AvailableReplicas:   running,
		UnavailableReplicas: max(desired-running, 0),
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: available, Reason: reason, LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
}

// withoutTimes drops the conditions' timestamps, to compare statuses.
func withoutTimes(s appsv1.DeploymentStatus) appsv1.DeploymentStatus {
	s = *s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastUpdateTime, s.Conditions[i].LastTransitionTime = metav1.Time{}, metav1.Time{}
		s.Conditions[i].Message = ""
	}
	return s
}
