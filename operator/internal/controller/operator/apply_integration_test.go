//go:build integration

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

package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// TestApplyLeavesOtherManagersFields: the operator applies only the fields it means to set, so
// a field another manager sets on its Deployment survives the operator's next apply, stays
// that manager's, and the operator owns no field it never set (the unstructured conversion it
// replaced claimed "spec.strategy" through an empty struct).
func TestApplyLeavesOtherManagersFields(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	const other = "someone-else"
	ac := appsv1ac.Deployment(operator.WebhookComponentName, testNamespace).
		WithSpec(appsv1ac.DeploymentSpec().WithMinReadySeconds(7))
	if err := k8s.Apply(context.Background(), ac, client.FieldOwner(other)); err != nil {
		t.Fatal(err)
	}
	// The operator re-applies the Deployment on every reconcile; a status change triggers one.
	setDeploymentStatus(t, operator.WebhookComponentName, operator.WebhookReplicas)
	eventually(t, 10*time.Second, "the operator re-applied the webhook Deployment", func() error {
		d := getDeployment(t, operator.WebhookComponentName)
		owners := map[string]string{}
		for _, m := range d.ManagedFields {
			if m.FieldsV1 != nil {
				owners[m.Manager] += string(m.FieldsV1.Raw)
			}
		}
		mine := owners[operator.FieldOwner]
		switch {
		case d.Spec.MinReadySeconds != 7:
			return fmt.Errorf("minReadySeconds = %d, want the other manager's 7", d.Spec.MinReadySeconds)
		case !strings.Contains(owners[other], `"f:minReadySeconds"`):
			return fmt.Errorf("%s no longer owns minReadySeconds: %v", other, owners)
		case strings.Contains(mine, `"f:minReadySeconds"`):
			return fmt.Errorf("the operator took minReadySeconds over")
		case strings.Contains(mine, `"f:strategy"`):
			return fmt.Errorf("the operator owns spec.strategy, which it never sets: %s", mine)
		case !strings.Contains(mine, `"f:replicas"`) || ptr.Deref(d.Spec.Replicas, 0) != operator.WebhookReplicas:
			return fmt.Errorf("the operator does not own the replicas it sets: %s", mine)
		}
		return nil
	})
}
