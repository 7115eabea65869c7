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

package apidiscovery

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// failingMapper answers every question with a discovery failure that is not "no match".
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("the server is currently unable to handle the request")
}

func TestServed(t *testing.T) {
	policy := schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicy"}
	mirrors := schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ImageDigestMirrorSet"}
	known := meta.NewDefaultRESTMapper(nil)
	known.Add(policy, meta.RESTScopeRoot)

	for _, tc := range []struct {
		name    string
		mapper  meta.RESTMapper
		gvk     schema.GroupVersionKind
		want    bool
		wantErr string
	}{
		{name: "served", mapper: known, gvk: policy, want: true},
		{name: "not served is no error", mapper: known, gvk: mirrors, want: false},
		{name: "served in another version only", mapper: known, gvk: schema.GroupVersionKind{Group: policy.Group, Version: "v1beta1", Kind: policy.Kind}, want: false},
		{name: "discovery failure names the kind", mapper: failingMapper{}, gvk: mirrors, wantErr: "discovering ImageDigestMirrorSet: the server is currently unable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Served(tc.mapper, tc.gvk)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Served(%s) error = %v, want one containing %q", tc.gvk, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Served(%s) = %v, %v; want %v, nil", tc.gvk, got, err, tc.want)
			}
		})
	}
}
