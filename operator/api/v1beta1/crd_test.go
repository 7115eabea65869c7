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

package v1beta1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1alpha1"
	"github.com/archgate/archgate/operator/api/v1beta1"
)

const crdDir = "../../config/crd/bases"

// loadCRD reads a generated CRD strictly: an unknown field means the file and the Go types disagree.
func loadCRD(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(crdDir, v1beta1.GroupName+"_"+plural+".yaml"))
	if err != nil {
		t.Fatalf("reading CRD: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatalf("parsing CRD %s: %v", plural, err)
	}
	return crd
}

// storageVersion returns the CRD's storage version; there must be exactly one.
func storageVersion(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	var stored []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			stored = append(stored, v)
		}
	}
	if len(stored) != 1 {
		t.Fatalf("CRD %s has %d storage versions, want 1", crd.Name, len(stored))
	}
	return stored[0]
}

// celRules returns every x-kubernetes-validations rule of the schema, keyed by its path.
func celRules(path string, s *apiextensionsv1.JSONSchemaProps, into map[string][]string) {
	if s == nil {
		return
	}
	for _, r := range s.XValidations {
		into[path] = append(into[path], r.Rule)
	}
	for name, p := range s.Properties {
		celRules(path+"."+name, &p, into)
	}
	if s.Items != nil {
		celRules(path+"[]", s.Items.Schema, into)
	}
}

// The rules of NamespacedObjectReference: a namespace name (DNS-1123 label) and an object name
// (DNS-1123 subdomain).
const (
	namespaceNameRule = "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"
	objectNameRule    = "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')"
)

func TestCRDFiles(t *testing.T) {
	tests := map[string]struct {
		plural      string
		wantKind    string
		wantScope   apiextensionsv1.ResourceScope
		wantColumns []string
		wantRules   map[string][]string
	}{
		"ClusterPodPlacementConfig": {
			plural:      "clusterpodplacementconfigs",
			wantKind:    "ClusterPodPlacementConfig",
			wantScope:   apiextensionsv1.ClusterScoped,
			wantColumns: []string{"Available", "Progressing", "Degraded", "Version", "Age"},
			wantRules: map[string][]string{
				"":                                      {"self.metadata.name == 'cluster'"},
				".spec.caBundleConfigmapRef.name":       {objectNameRule},
				".spec.caBundleConfigmapRef.namespace":  {namespaceNameRule},
				".spec.globalPullSecretRef.name":        {objectNameRule},
				".spec.globalPullSecretRef.namespace":   {namespaceNameRule},
				".spec.imageInspection.blockedNetworks": {"self.all(c, isCIDR(c))"},
				".spec.imageInspection.cacheTTL":        {"duration(self) >= duration('1s') && duration(self) <= duration('24h')"},
				".spec.imageInspection.credentialProviders.configConfigmapRef.name":      {objectNameRule},
				".spec.imageInspection.credentialProviders.configConfigmapRef.namespace": {namespaceNameRule},
				".spec.imageInspection.credentialProviders.hostBinDir":                   {"!self.split('/').exists(e, e == '..')"},
				".spec.imageInspection.credentialProviders.hostFiles[]":                  hostFileRules(),
				".spec.imageInspection.failureCacheTTL":                                  {"duration(self) >= duration('0s') && duration(self) <= duration('5m')"},
				".spec.imageInspection.maxGateAge":                                       {"duration(self) >= duration('1m') && duration(self) <= duration('24h')"},
				".spec.imageInspection.mirrorCredentialsSecretRef.name":                  {objectNameRule},
				".spec.imageInspection.timeout":                                          {"duration(self) >= duration('1s') && duration(self) <= duration('5m')"},
				".spec.plugins.execFormatErrorMonitor.deleteInterval":                    {"duration(self) >= duration('1m')"},
				".spec.plugins.nodeAffinityScoring":                                      {"!self.enabled || (has(self.platforms) && size(self.platforms) > 0)"},
				".spec.plugins.nodeAffinityScoring.platforms":                            {"self.all(p, self.exists_one(q, q.architecture == p.architecture))"},
				".spec.placementRules[]": {
					"(has(self.requiredArchitectures) && size(self.requiredArchitectures) > 0) || (has(self.preferredArchitectures) && size(self.preferredArchitectures) > 0)",
					"!has(self.requiredArchitectures) || size(self.requiredArchitectures) == 0 || !has(self.preferredArchitectures) || self.preferredArchitectures.all(p, p.architecture in self.requiredArchitectures)",
				},
				".spec.placementRules[].name":                {namespaceNameRule},
				".spec.registriesConfConfigmapRef.name":      {objectNameRule},
				".spec.registriesConfConfigmapRef.namespace": {namespaceNameRule},
				".spec.registryCertsConfigmapRef.name":       {objectNameRule},
				".spec.registryCertsConfigmapRef.namespace":  {namespaceNameRule},
			},
		},
		"PodPlacementConfig": {
			plural:      "podplacementconfigs",
			wantKind:    "PodPlacementConfig",
			wantScope:   apiextensionsv1.NamespaceScoped,
			wantColumns: []string{"Priority", "In Effect", "Reason", "Selector Valid", "Namespace Configs Valid", "Local Available", "Age"},
			wantRules: map[string][]string{
				".spec.plugins": {"!has(self.execFormatErrorMonitor)"},
				".spec.plugins.execFormatErrorMonitor.deleteInterval": {"duration(self) >= duration('1m')"},
				".spec.plugins.nodeAffinityScoring":                   {"!self.enabled || (has(self.platforms) && size(self.platforms) > 0)"},
				".spec.plugins.nodeAffinityScoring.platforms":         {"self.all(p, self.exists_one(q, q.architecture == p.architecture))"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crd := loadCRD(t, tc.plural)
			if crd.Spec.Group != v1beta1.GroupName || crd.Spec.Names.Kind != tc.wantKind || crd.Spec.Scope != tc.wantScope {
				t.Errorf("group/kind/scope = %s/%s/%s, want %s/%s/%s", crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Scope,
					v1beta1.GroupName, tc.wantKind, tc.wantScope)
			}
			v := storageVersion(t, crd)
			if v.Name != v1beta1.GroupVersion.Version || !v.Served {
				t.Errorf("storage version %s served=%t, want %s served and stored", v.Name, v.Served, v1beta1.GroupVersion.Version)
			}
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Error("status subresource missing")
			}
			var gotColumns []string
			for _, c := range v.AdditionalPrinterColumns {
				gotColumns = append(gotColumns, c.Name)
			}
			if diff := cmp.Diff(tc.wantColumns, gotColumns); diff != "" {
				t.Errorf("printer columns (-want +got):\n%s", diff)
			}
			gotRules := map[string][]string{}
			celRules("", v.Schema.OpenAPIV3Schema, gotRules)
			if diff := cmp.Diff(tc.wantRules, gotRules); diff != "" {
				t.Errorf("CEL rules by path (-want +got):\n%s", diff)
			}

			// The apiserver's own static validation: structural schema, defaults pruned, CEL rules
			// compile and fit the cost budget.
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
				t.Fatalf("converting CRD: %v", err)
			}
			internal.Status.StoredVersions = []string{v.Name}
			if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
				t.Errorf("the apiserver would reject the CRD: %v", errs.ToAggregate())
			}
		})
	}
}

// hostFileRules are the rules of a credentialProviders.hostFiles entry; the last one refuses
// exactly v1beta1.ReservedHostPaths (which the operator's TestHostFilesAvoidOwnMounts keeps in
// step with the components' mounts).
func hostFileRules() []string {
	quoted := make([]string, 0, len(v1beta1.ReservedHostPaths()))
	for _, p := range v1beta1.ReservedHostPaths() {
		quoted = append(quoted, "'"+p+"'")
	}
	return []string{
		"self.startsWith('/')",
		"!self.split('/').exists(e, e == '..')",
		"!self.split('/').exists(e, e == '.') && !self.contains('//') && !self.endsWith('/')",
		"![" + strings.Join(quoted, ", ") + "].exists(d, self == d || self.startsWith(d + '/'))",
	}
}

// TestCRDVersions: the versions each CRD serves. ClusterPodPlacementConfig also serves the
// deprecated v1alpha1 of the upstream operator, converted by the apiserver (strategy None),
// which is lossless only because its schema is the v1beta1 schema, field for field.
// PodPlacementConfig never had a v1alpha1.
func TestCRDVersions(t *testing.T) {
	type version struct {
		Name               string
		Served, Storage    bool
		Deprecated         bool
		DeprecationWarning string
	}
	tests := map[string]struct {
		plural       string
		wantVersions []version
	}{
		"ClusterPodPlacementConfig": {
			plural: "clusterpodplacementconfigs",
			wantVersions: []version{
				{Name: "v1alpha1", Served: true, Deprecated: true,
					DeprecationWarning: v1alpha1.DeprecationWarning},
				{Name: "v1beta1", Served: true, Storage: true},
			},
		},
		"PodPlacementConfig": {
			plural:       "podplacementconfigs",
			wantVersions: []version{{Name: "v1beta1", Served: true, Storage: true}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crd := loadCRD(t, tc.plural)
			var got []version
			for _, v := range crd.Spec.Versions {
				got = append(got, version{Name: v.Name, Served: v.Served, Storage: v.Storage,
					Deprecated: v.Deprecated, DeprecationWarning: ptr.Deref(v.DeprecationWarning, "")})
			}
			if diff := cmp.Diff(tc.wantVersions, got); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
			// strategy None only renames apiVersion: every version must have the storage
			// version's schema, columns and subresources, or a write through it loses fields.
			if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
				t.Errorf("conversion strategy %s, want %s", crd.Spec.Conversion.Strategy, apiextensionsv1.NoneConverter)
			}
			stored := storageVersion(t, crd)
			for _, v := range crd.Spec.Versions {
				// The kinds' doc comments may differ, the fields may not.
				want, got := *stored.Schema.OpenAPIV3Schema, *v.Schema.OpenAPIV3Schema
				want.Description, got.Description = "", ""
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("version %s: schema differs from %s (-%s +%s):\n%s", v.Name, stored.Name, stored.Name, v.Name, diff)
				}
				if diff := cmp.Diff(stored.Subresources, v.Subresources); diff != "" {
					t.Errorf("version %s: subresources differ from %s:\n%s", v.Name, stored.Name, diff)
				}
				if diff := cmp.Diff(stored.AdditionalPrinterColumns, v.AdditionalPrinterColumns); diff != "" {
					t.Errorf("version %s: printer columns differ from %s:\n%s", v.Name, stored.Name, diff)
				}
			}
		})
	}
}

// TestUpstreamV1alpha1Manifests: ClusterPodPlacementConfigs written for the upstream operator's
// v1alpha1 (spec.logVerbosity and spec.namespaceSelector only) pass the v1alpha1 schema, with
// the same defaults and refusals as v1beta1.
func TestUpstreamV1alpha1Manifests(t *testing.T) {
	tests := map[string]struct {
		object         string
		wantVerbosity  string
		wantErrorsLike []string
	}{
		"upstream sample": {
			object: `apiVersion: multiarch.openshift.io/v1alpha1
kind: ClusterPodPlacementConfig
metadata:
  name: cluster
spec:
  logVerbosity: Debug
  namespaceSelector:
    matchExpressions:
    - key: multiarch.openshift.io/exclude-pod-placement
      operator: DoesNotExist
`,
			wantVerbosity: "Debug",
		},
		"no spec: defaults": {
			object: `apiVersion: multiarch.openshift.io/v1alpha1
kind: ClusterPodPlacementConfig
metadata:
  name: cluster
`,
			wantVerbosity: "Normal",
		},
		"unknown verbosity": {
			object: `apiVersion: multiarch.openshift.io/v1alpha1
kind: ClusterPodPlacementConfig
metadata:
  name: cluster
spec:
  logVerbosity: Loud
`,
			wantErrorsLike: []string{`spec.logVerbosity: Unsupported value: "Loud"`},
		},
		"not the singleton": {
			object: `apiVersion: multiarch.openshift.io/v1alpha1
kind: ClusterPodPlacementConfig
metadata:
  name: other
`,
			wantVerbosity:  "Normal",
			wantErrorsLike: []string{"ClusterPodPlacementConfig is a singleton"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj, errs := admitVersion(t, "clusterpodplacementconfigs", "v1alpha1", tc.object)
			if len(errs) != len(tc.wantErrorsLike) {
				t.Fatalf("errors %q, want %d like %q", errs, len(tc.wantErrorsLike), tc.wantErrorsLike)
			}
			for i, want := range tc.wantErrorsLike {
				if !strings.Contains(errs[i], want) {
					t.Errorf("error %q, want it to contain %q", errs[i], want)
				}
			}
			if tc.wantVerbosity == "" {
				return
			}
			spec, _ := obj["spec"].(map[string]any)
			if got := spec["logVerbosity"]; got != tc.wantVerbosity {
				t.Errorf("spec.logVerbosity = %v, want %s", got, tc.wantVerbosity)
			}
		})
	}
}

// admit runs the steps the apiserver applies to a custom resource on create: pruning, defaulting,
// OpenAPI schema validation, list-type validation and CEL validation. It returns the defaulted
// object and the error messages.
func admit(t *testing.T, plural, object string) (map[string]any, []string) {
	t.Helper()
	return admitVersion(t, plural, v1beta1.GroupVersion.Version, object)
}

// admitVersion is admit with the schema of the named version of the CRD.
func admitVersion(t *testing.T, plural, version, object string) (map[string]any, []string) {
	t.Helper()
	crd := loadCRD(t, plural)
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	if i < 0 {
		t.Fatalf("CRD %s has no version %s", plural, version)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[i].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatalf("converting schema: %v", err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("structural schema: %v", err)
	}
	// Decode as the apiserver does: JSON integers become int64, not float64.
	js, err := yaml.YAMLToJSON([]byte(object))
	if err != nil {
		t.Fatalf("parsing object: %v", err)
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		t.Fatalf("parsing object: %v", err)
	}
	pruning.Prune(obj, structural, true)
	defaulting.Default(obj, structural)

	schemaValidator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatalf("schema validator: %v", err)
	}
	errs := validation.ValidateCustomResource(nil, obj, schemaValidator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, structural, obj)...)
	celErrs, _ := schemacel.NewValidator(structural, true, celconfig.PerCallLimit).
		Validate(context.Background(), nil, structural, obj, nil, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return obj, msgs
}

func TestClusterPodPlacementConfigValidation(t *testing.T) {
	const head = "apiVersion: multiarch.openshift.io/v1beta1\nkind: ClusterPodPlacementConfig\n"
	tests := map[string]struct {
		object     string
		wantErrors []string // substrings, one per expected error, in any order
	}{
		"minimal singleton": {object: head + "metadata: {name: cluster}\n"},
		"full": {object: head + `metadata: {name: cluster}
spec:
  logVerbosity: TraceAll
  namespaceSelector:
    matchExpressions: [{key: multiarch.openshift.io/exclude-pod-placement, operator: DoesNotExist}]
  plugins:
    nodeAffinityScoring:
      enabled: true
      platforms: [{architecture: arm64, weight: 75}, {architecture: amd64, weight: 25}]
    execFormatErrorMonitor: {enabled: true}
  globalPullSecretRef: {namespace: openshift-config, name: pull-secret}
  caBundleConfigmapRef: {name: trusted-ca}
  imageInspection: {cacheSize: 0, cacheTTL: 1h30m, timeout: 5m, maxRetries: 0}
`},
		"wrong name": {
			object:     head + "metadata: {name: other}\n",
			wantErrors: []string{".metadata.name must be 'cluster'"},
		},
		"unknown verbosity": {
			object:     head + "metadata: {name: cluster}\nspec: {logVerbosity: Loud}\n",
			wantErrors: []string{"spec.logVerbosity: Unsupported value"},
		},
		"enabled scoring without platforms": {
			object:     head + "metadata: {name: cluster}\nspec: {plugins: {nodeAffinityScoring: {enabled: true}}}\n",
			wantErrors: []string{"platforms must not be empty when nodeAffinityScoring is enabled"},
		},
		"enabled scoring with empty platforms": {
			object:     head + "metadata: {name: cluster}\nspec: {plugins: {nodeAffinityScoring: {enabled: true, platforms: []}}}\n",
			wantErrors: []string{"platforms must not be empty when nodeAffinityScoring is enabled"},
		},
		"disabled scoring without platforms": {
			object: head + "metadata: {name: cluster}\nspec: {plugins: {nodeAffinityScoring: {enabled: false}}}\n",
		},
		"exec format error monitor without enabled": {
			object:     head + "metadata: {name: cluster}\nspec: {plugins: {execFormatErrorMonitor: {}}}\n",
			wantErrors: []string{"execFormatErrorMonitor.enabled: Required value"},
		},
		"missing enabled": {
			object:     head + "metadata: {name: cluster}\nspec: {plugins: {nodeAffinityScoring: {platforms: [{architecture: amd64, weight: 1}]}}}\n",
			wantErrors: []string{"enabled: Required value"},
		},
		"duplicate architecture": {
			object: head + "metadata: {name: cluster}\nspec: {plugins: {nodeAffinityScoring: {enabled: true, platforms: [{architecture: amd64, weight: 1}, {architecture: amd64, weight: 2}]}}}\n",
			wantErrors: []string{
				"platforms[1]: Duplicate value",
				"each architecture may appear only once in platforms",
			},
		},
		"unknown architecture and weights out of range": {
			object: head + "metadata: {name: cluster}\nspec: {plugins: {nodeAffinityScoring: {enabled: true, platforms: [{architecture: riscv64, weight: 0}, {architecture: arm64, weight: 101}]}}}\n",
			wantErrors: []string{
				"platforms[0].architecture: Unsupported value",
				"platforms[0].weight: Invalid value",
				"platforms[1].weight: Invalid value",
			},
		},
		"pull secret in an invalid namespace": {
			object:     head + "metadata: {name: cluster}\nspec: {globalPullSecretRef: {namespace: Team_A, name: pull-secret}}\n",
			wantErrors: []string{"globalPullSecretRef.namespace: Invalid value: \"Team_A\": namespace must be a namespace name"},
		},
		"CA bundle with an invalid name": {
			object:     head + "metadata: {name: cluster}\nspec: {caBundleConfigmapRef: {name: trusted/ca}}\n",
			wantErrors: []string{"caBundleConfigmapRef.name: Invalid value: \"trusted/ca\": name must be an object name"},
		},
		"registry references with invalid names": {
			object: head + "metadata: {name: cluster}\nspec: {registriesConfConfigmapRef: {name: -conf}, registryCertsConfigmapRef: {namespace: ns-, name: certs.}}\n",
			wantErrors: []string{
				"registriesConfConfigmapRef.name: Invalid value: \"-conf\": name must be an object name",
				"registryCertsConfigmapRef.namespace: Invalid value: \"ns-\": namespace must be a namespace name",
				"registryCertsConfigmapRef.name: Invalid value: \"certs.\": name must be an object name",
			},
		},
		"dotted object name": {
			object: head + "metadata: {name: cluster}\nspec: {caBundleConfigmapRef: {namespace: kube-system, name: registry.example.ca}}\n",
		},
		"mirror credentials with an invalid name": {
			object:     head + "metadata: {name: cluster}\nspec: {imageInspection: {mirrorCredentialsSecretRef: {name: Mirror_Auth}}}\n",
			wantErrors: []string{"mirrorCredentialsSecretRef.name: Invalid value: \"Mirror_Auth\": name must be an object name"},
		},
		"mirror credentials without name": {
			object:     head + "metadata: {name: cluster}\nspec: {imageInspection: {mirrorCredentialsSecretRef: {}}}\n",
			wantErrors: []string{"mirrorCredentialsSecretRef.name: Required value"},
		},
		"pull secret without name": {
			object:     head + "metadata: {name: cluster}\nspec: {globalPullSecretRef: {namespace: ns}}\n",
			wantErrors: []string{"globalPullSecretRef.name: Required value"},
		},
		"inspection knobs out of range": {
			object: head + "metadata: {name: cluster}\nspec: {imageInspection: {cacheSize: -1, cacheTTL: 500ms, timeout: 6m, maxRetries: 21}}\n",
			wantErrors: []string{
				"cacheSize: Invalid value",
				"cacheTTL must be between 1s and 24h",
				"timeout must be between 1s and 5m",
				"maxRetries: Invalid value",
			},
		},
		"credential providers": {
			object: head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: credential-providers}, hostBinDir: /etc/eks/image-credential-provider}}}\n",
		},
		"credential providers without their fields": {
			object:     head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {}}}\n",
			wantErrors: []string{"credentialProviders.configConfigmapRef: Required value", "credentialProviders.hostBinDir: Required value"},
		},
		"credential providers with a relative bin dir": {
			object:     head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: c}, hostBinDir: usr/bin}}}\n",
			wantErrors: []string{"credentialProviders.hostBinDir: Invalid value"},
		},
		"credential providers with .. in the bin dir": {
			object:     head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: c}, hostBinDir: /opt/../etc}}}\n",
			wantErrors: []string{"hostBinDir must be an absolute path without '..' elements"},
		},
		"credential providers with host files": {
			object: head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: c}, " +
				"hostBinDir: /var/lib/kubelet/credential-provider, hostFiles: [/etc/kubernetes/azure.json, /etc/kubernetes/akscustom.json]}}}\n",
		},
		"host files refused": {
			object: head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: c}, " +
				"hostBinDir: /var/lib/kubelet/credential-provider, hostFiles: [etc/kubernetes/azure.json, /etc/kubernetes/../shadow, " +
				"/etc/./archgate/x, //etc/archgate/x, /etc/kubernetes/, /, /var/run/secrets/kubernetes.io/serviceaccount/token, /etc/resolv.conf]}}}\n",
			wantErrors: []string{
				`host file etc/kubernetes/azure.json must be an absolute path`,
				`host file /etc/kubernetes/../shadow must not have .. elements`,
				`host file /etc/./archgate/x must be a clean path naming a file`,
				`host file //etc/archgate/x must be a clean path naming a file`,
				`host file /etc/kubernetes/ must be a clean path naming a file`,
				`host file / must be a clean path naming a file`,
				"hostFiles[5] in body should be at least 2 chars long",
				`host file /var/run/secrets/kubernetes.io/serviceaccount/token is reserved`,
				`host file /etc/resolv.conf is reserved`,
			},
		},
		"host files: at most 8, each once": {
			object: head + "metadata: {name: cluster}\nspec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: c}, " +
				"hostBinDir: /var/lib/kubelet/credential-provider, hostFiles: [/a/1, /a/2, /a/3, /a/4, /a/5, /a/6, /a/7, /a/8, /a/8]}}}\n",
			wantErrors: []string{"hostFiles: Too many: 9: must have at most 8 items", "hostFiles[8]: Duplicate value"},
		},
		"placement rules": {
			object: head + `metadata: {name: cluster}
spec:
  placementRules:
  - name: ml-prefers-arm
    expression: "object.metadata.?labels.?team.orValue('') == 'ml'"
    preferredArchitectures: [{architecture: arm64, weight: 80}]
  - name: batch-on-amd
    expression: "object.metadata.namespace.startsWith('batch-')"
    requiredArchitectures: [amd64, arm64]
    preferredArchitectures: [{architecture: amd64, weight: 10}]
`},
		"a placement rule without architectures": {
			object:     head + "metadata: {name: cluster}\nspec: {placementRules: [{name: a, expression: 'true'}, {name: b, expression: 'true', requiredArchitectures: []}]}\n",
			wantErrors: []string{"a placement rule needs requiredArchitectures, preferredArchitectures or both", "a placement rule needs requiredArchitectures, preferredArchitectures or both"},
		},
		"a placement rule preferring an architecture it does not allow": {
			object: head + "metadata: {name: cluster}\nspec: {placementRules: [{name: a, expression: 'true', requiredArchitectures: [amd64], " +
				"preferredArchitectures: [{architecture: arm64, weight: 5}]}]}\n",
			wantErrors: []string{"preferredArchitectures must be among requiredArchitectures"},
		},
		"placement rules with bad names, architectures and a duplicate": {
			object: head + "metadata: {name: cluster}\nspec: {placementRules: [{name: Team_ML, expression: 'true', requiredArchitectures: [riscv64]}, " +
				"{name: b, expression: 'true', requiredArchitectures: [amd64, amd64]}, {name: b, expression: 'false', requiredArchitectures: [amd64]}]}\n",
			wantErrors: []string{
				`placementRules[0].name: Invalid value: "Team_ML": name must be a DNS label`,
				"placementRules[0].requiredArchitectures[0]: Unsupported value",
				"placementRules[1].requiredArchitectures[1]: Duplicate value",
				"placementRules[2]: Duplicate value",
			},
		},
		"a placement rule expression too long": {
			object:     head + "metadata: {name: cluster}\nspec: {placementRules: [{name: a, expression: '" + strings.Repeat("x", 1025) + "', requiredArchitectures: [amd64]}]}\n",
			wantErrors: []string{"placementRules[0].expression: Too long"},
		},
		"inspection duration not a duration": {
			object:     head + "metadata: {name: cluster}\nspec: {imageInspection: {timeout: soon}}\n",
			wantErrors: []string{"timeout: Invalid value", "timeout: Invalid value"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, gotErrors := admit(t, "clusterpodplacementconfigs", tc.object)
			assertErrors(t, gotErrors, tc.wantErrors)
		})
	}
}

// TestHostFilesReserved: every reserved path, and any path under it, is refused as a host file,
// in both served versions; a path that merely starts with the same letters is not.
func TestHostFilesReserved(t *testing.T) {
	for _, version := range []string{v1beta1.GroupVersion.Version, v1alpha1.GroupVersion.Version} {
		for _, r := range v1beta1.ReservedHostPaths() {
			for _, path := range []string{r, r + "/x/config.json"} {
				t.Run(version+" "+path, func(t *testing.T) {
					_, got := admitVersion(t, "clusterpodplacementconfigs", version, hostFilesObject(version, path))
					assertErrors(t, got, []string{"host file " + path + " is reserved"})
				})
			}
			t.Run(version+" "+r+"-other", func(t *testing.T) {
				_, got := admitVersion(t, "clusterpodplacementconfigs", version, hostFilesObject(version, r+"-other"))
				assertErrors(t, got, nil)
			})
		}
	}
}

// hostFilesObject is a ClusterPodPlacementConfig of the version whose credential providers name
// one host file.
func hostFilesObject(version, path string) string {
	return "apiVersion: multiarch.openshift.io/" + version + "\nkind: ClusterPodPlacementConfig\nmetadata: {name: cluster}\n" +
		"spec: {imageInspection: {credentialProviders: {configConfigmapRef: {name: c}, hostBinDir: /var/lib/kubelet/credential-provider, " +
		"hostFiles: [" + path + "]}}}\n"
}

// TestSamplesAdmitted: every ClusterPodPlacementConfig sample of deploy/samples passes the
// CRD's validation, as `kubectl apply -f` would need.
func TestSamplesAdmitted(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join("..", "..", "..", "deploy", "samples", "clusterpodplacementconfig*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, path := range samples {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, errs := admit(t, "clusterpodplacementconfigs", string(raw)); len(errs) > 0 {
				t.Errorf("the CRD refuses the sample: %v", errs)
			}
		})
	}
}

func TestClusterPodPlacementConfigDefaults(t *testing.T) {
	obj, errs := admit(t, "clusterpodplacementconfigs",
		"apiVersion: multiarch.openshift.io/v1beta1\nkind: ClusterPodPlacementConfig\nmetadata: {name: cluster}\n")
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	wantSpec := map[string]any{
		"logVerbosity":             "Normal",
		"admissionPlacement":       string(v1beta1.AdmissionPlacementEnabled),
		"admissionPolicy":          string(v1beta1.AdmissionPolicyDisabled),
		"localPlacement":           string(v1beta1.LocalPlacementDisabled),
		"operatingSystemPlacement": string(v1beta1.OperatingSystemPlacementDisabled),
		"imageInspection": map[string]any{
			"cacheSize":       int64(v1beta1.DefaultImageCacheSize),
			"cacheTTL":        "10m",
			"timeout":         "30s",
			"maxRetries":      int64(v1beta1.DefaultImageInspectionMaxRetries),
			"maxGateAge":      "10m",
			"failureCacheTTL": "10s",
			"maxImagesPerPod": int64(v1beta1.DefaultMaxImagesPerPod),
		},
	}
	if diff := cmp.Diff(wantSpec, obj["spec"]); diff != "" {
		t.Errorf("defaulted spec (-want +got):\n%s", diff)
	}

	// The server-side defaults and the Go defaults must agree.
	raw, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	typed := &v1beta1.ClusterPodPlacementConfig{}
	if err := yaml.UnmarshalStrict(raw, typed); err != nil {
		t.Fatalf("defaulted object does not decode into the Go type: %v", err)
	}
	if diff := cmp.Diff((*v1beta1.ImageInspection)(nil).Settings(), typed.Spec.ImageInspection.Settings()); diff != "" {
		t.Errorf("server defaults differ from Go defaults (-go +server):\n%s", diff)
	}
}

// TestImageInspectionBoundsMatchCRD keeps the markers of ImageInspection (what the API server
// enforces) and the Go constants (what ImageInspectionSettings.Validate enforces) in step.
func TestImageInspectionBoundsMatchCRD(t *testing.T) {
	crd := loadCRD(t, "clusterpodplacementconfigs")
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["imageInspection"].Properties
	bounds := func(name string) [2]float64 {
		p := props[name]
		if p.Minimum == nil || p.Maximum == nil {
			t.Fatalf("imageInspection.%s has no minimum or maximum in the CRD", name)
		}
		return [2]float64{*p.Minimum, *p.Maximum}
	}
	got := map[string]any{
		"cacheSize":       bounds("cacheSize"),
		"maxRetries":      bounds("maxRetries"),
		"maxImagesPerPod": bounds("maxImagesPerPod"),
		"cacheTTL":        props["cacheTTL"].XValidations[0].Rule,
		"timeout":         props["timeout"].XValidations[0].Rule,
		"failureCacheTTL": props["failureCacheTTL"].XValidations[0].Rule,
		"maxGateAge":      props["maxGateAge"].XValidations[0].Rule,
	}
	rule := func(lo, hi time.Duration) string {
		return fmt.Sprintf("duration(self) >= duration('%s') && duration(self) <= duration('%s')", short(lo), short(hi))
	}
	want := map[string]any{
		"cacheSize":       [2]float64{0, v1beta1.MaxImageCacheSize},
		"maxRetries":      [2]float64{0, v1beta1.MaxImageInspectionMaxRetries},
		"maxImagesPerPod": [2]float64{1, v1beta1.MaxImagesPerPodLimit},
		"cacheTTL":        rule(v1beta1.MinImageCacheTTL, v1beta1.MaxImageCacheTTL),
		"timeout":         rule(v1beta1.MinImageInspectionTimeout, v1beta1.MaxImageInspectionTimeout),
		"failureCacheTTL": rule(0, v1beta1.MaxImageFailureCacheTTL),
		"maxGateAge":      rule(v1beta1.MinMaxGateAge, v1beta1.MaxMaxGateAge),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRD bounds (-go +crd):\n%s", diff)
	}
}

// short formats d as the markers write it ("24h", "5m", "1s").
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func TestPodPlacementConfigValidation(t *testing.T) {
	const head = "apiVersion: multiarch.openshift.io/v1beta1\nkind: PodPlacementConfig\nmetadata: {name: prefer-arm, namespace: team}\n"
	tests := map[string]struct {
		object       string
		wantErrors   []string
		wantPriority any
	}{
		"seed example": {
			object: head + `spec:
  labelSelector:
    matchExpressions: [{key: app, operator: In, values: [fast-on-arm]}]
  priority: 100
  plugins:
    nodeAffinityScoring:
      enabled: true
      platforms: [{architecture: amd64, weight: 25}, {architecture: arm64, weight: 75}]
`,
			wantPriority: int64(100),
		},
		"priority defaults to 0": {
			object:       head + "spec: {}\n",
			wantPriority: int64(0),
		},
		"priority above 255": {
			object:       head + "spec: {priority: 256}\n",
			wantErrors:   []string{"spec.priority: Invalid value"},
			wantPriority: int64(256),
		},
		"negative priority": {
			object:       head + "spec: {priority: -1}\n",
			wantErrors:   []string{"spec.priority: Invalid value"},
			wantPriority: int64(-1),
		},
		"exec format error monitor is cluster-wide only": {
			object:       head + "spec: {plugins: {execFormatErrorMonitor: {enabled: true}}}\n",
			wantErrors:   []string{"execFormatErrorMonitor is cluster-wide: set it in the ClusterPodPlacementConfig"},
			wantPriority: int64(0),
		},
		"enabled scoring without platforms": {
			object:       head + "spec: {plugins: {nodeAffinityScoring: {enabled: true}}}\n",
			wantErrors:   []string{"platforms must not be empty when nodeAffinityScoring is enabled"},
			wantPriority: int64(0),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj, gotErrors := admit(t, "podplacementconfigs", tc.object)
			assertErrors(t, gotErrors, tc.wantErrors)
			spec, _ := obj["spec"].(map[string]any)
			if diff := cmp.Diff(tc.wantPriority, spec["priority"]); diff != "" {
				t.Errorf("priority (-want +got):\n%s", diff)
			}
		})
	}
}

// assertErrors checks that each wanted substring matches a distinct error, and that no error is left.
func assertErrors(t *testing.T, got, want []string) {
	t.Helper()
	left := slices.Clone(got)
	for _, w := range want {
		i := slices.IndexFunc(left, func(g string) bool { return strings.Contains(g, w) })
		if i < 0 {
			t.Errorf("no error contains %q; errors: %q", w, got)
			continue
		}
		left = slices.Delete(left, i, i+1)
	}
	if len(left) > 0 {
		t.Errorf("unexpected errors: %q", left)
	}
}
