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

package metricsreader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

// TestClusterRoleMatchesInstallation checks that the role the simulator and the tests grant is
// the one operator/config/rbac installs for Prometheus.
func TestClusterRoleMatchesInstallation(t *testing.T) {
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "operator", "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	installed := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, installed); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(installed, ClusterRole()); diff != "" {
		t.Errorf("operator/config/rbac/metrics_reader_role.yaml differs from ClusterRole() (-installed +code):\n%s", diff)
	}
}
