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

package main

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// repoRoot is the repository's root, from this package's directory (hack/bundle/gen).
const repoRoot = "../../.."

// validators are the operator framework's own: the default bundle validators (CSV, CRDs,
// bundle), and those OperatorHub and the community catalogs run. MultipleArchitecturesValidator
// is left out: it pulls the images from their registry, which tests here cannot reach
// (make test-image checks the image's four architectures instead).
var validators = interfaces.Validators{}.WithValidators(validation.DefaultBundleValidators...).WithValidators(
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.ObjectValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.GoodPracticesValidator,
)

// k8sVersion is the newest Kubernetes the deprecated-API check holds the bundle to: the
// version archgate is built and tested against.
const k8sVersion = "1.37"

// validate loads the bundle in dir as OLM would and runs the validators; it returns the
// errors and the warnings, each as "validator-visible name: message".
func validate(t *testing.T, dir string) (errs, warns []string) {
	t.Helper()
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return []string{"load: " + err.Error()}, nil
	}
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": k8sVersion})
	for _, r := range validators.Validate(objs...) {
		for _, e := range r.Errors {
			errs = append(errs, r.Name+": "+e.Error())
		}
		for _, w := range r.Warnings {
			warns = append(warns, r.Name+": "+w.Error())
		}
	}
	return errs, warns
}

// TestCommittedBundleValidates runs the validators over bundle/ as committed (make
// verify-generated checks that it is what the generator writes), or over the bundle in
// $BUNDLE_DIR (make release validates the release's bundle so).
func TestCommittedBundleValidates(t *testing.T) {
	dir := cmp.Or(os.Getenv("BUNDLE_DIR"), filepath.Join(repoRoot, defaultBundleDir))
	errs, warns := validate(t, dir)
	for _, w := range warns {
		t.Logf("warning: %s", w)
	}
	if len(errs) > 0 {
		t.Fatalf("bundle/ does not validate:\n%s", strings.Join(errs, "\n"))
	}
	// Every warning is known and explained here: a new one fails, so that it is read.
	var want []string
	if diff := gocmp.Diff(want, warns); diff != "" {
		t.Errorf("validator warnings (-known +got):\n%s", diff)
	}
}

// TestValidationCatchesBrokenCSV breaks one thing of a freshly rendered bundle at a time and
// wants the validators to name it: the check would otherwise pass whatever is committed.
func TestValidationCatchesBrokenCSV(t *testing.T) {
	for name, tc := range map[string]struct {
		breakIt func(*v1alpha1.ClusterServiceVersion)
		want    string
	}{
		"no installModes": {
			breakIt: func(c *v1alpha1.ClusterServiceVersion) { c.Spec.InstallModes = nil },
			want:    "install modes",
		},
		"owned CRD not in the bundle": {
			breakIt: func(c *v1alpha1.ClusterServiceVersion) { c.Spec.CustomResourceDefinitions.Owned[0].Kind = "Missing" },
			want:    "not found in bundle",
		},
		"CRD in the bundle not owned": {
			breakIt: func(c *v1alpha1.ClusterServiceVersion) {
				c.Spec.CustomResourceDefinitions.Owned = c.Spec.CustomResourceDefinitions.Owned[1:]
			},
			want: "not defined in CSV",
		},
		"bad minKubeVersion": {
			breakIt: func(c *v1alpha1.ClusterServiceVersion) { c.Spec.MinKubeVersion = "one.thirty" },
			want:    "one.thirty",
		},
		"unknown category": {
			breakIt: func(c *v1alpha1.ClusterServiceVersion) { c.Annotations["categories"] = "Made Up" },
			want:    "Made Up",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files, err := render(repoRoot, Options{Out: dir})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if csv, ok := f.obj.(v1alpha1.ClusterServiceVersion); ok {
					tc.breakIt(&csv)
					f.obj = csv
				}
				if err := write(dir, f); err != nil {
					t.Fatal(err)
				}
			}
			errs, _ := validate(t, dir)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Errorf("want an error mentioning %q, got:\n%s", tc.want, strings.Join(errs, "\n"))
			}
		})
	}
}

// TestRenderPinsReleaseImage: a release passes its image by digest; the CSV must then name
// only that digest (disconnected installs mirror relatedImages by digest).
func TestRenderPinsReleaseImage(t *testing.T) {
	const img = "registry.example/archgate/archgate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	files, err := render(repoRoot, Options{Version: "1.2.3", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	var csv v1alpha1.ClusterServiceVersion
	for _, f := range files {
		if c, ok := f.obj.(v1alpha1.ClusterServiceVersion); ok {
			csv = c
		}
	}
	got := map[string]string{
		"name":           csv.Name,
		"version":        csv.Spec.Version.String(),
		"containerImage": csv.Annotations["containerImage"],
		"relatedImage":   csv.Spec.RelatedImages[0].Image,
		"deployment":     csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image,
	}
	want := map[string]string{"name": "archgate.v1.2.3", "version": "1.2.3", "containerImage": img, "relatedImage": img, "deployment": img}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("release CSV (-want +got):\n%s", diff)
	}
}

// TestRenderRejectsBadVersion: the CSV's name and spec.version come from VERSION, which must be
// a semantic version; the error names the value.
func TestRenderRejectsBadVersion(t *testing.T) {
	_, err := render(repoRoot, Options{Version: "v1.2"})
	if err == nil || !strings.Contains(err.Error(), `"v1.2"`) {
		t.Errorf("render with VERSION v1.2: got error %v, want one naming \"v1.2\"", err)
	}
}

// TestWebhookDefinitionsRefuseWhatOLMCannotCarry: a webhook of the manifests whose meaning OLM
// would change is an error naming it, not a silently different webhook.
func TestWebhookDefinitionsRefuseWhatOLMCannotCarry(t *testing.T) {
	path := "/validate"
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "op"}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "webhook", ContainerPort: 9443}}}}
	svc := &admissionregistrationv1.ServiceReference{Name: "svc", Path: &path}
	for name, tc := range map[string]struct {
		hook    admissionregistrationv1.ValidatingWebhook
		wantErr string
	}{
		"plain":              {hook: admissionregistrationv1.ValidatingWebhook{Name: "w", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc}}},
		"no path":            {hook: admissionregistrationv1.ValidatingWebhook{Name: "w", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "svc"}}}, wantErr: "webhook w: clientConfig.service.path"},
		"namespace selector": {hook: admissionregistrationv1.ValidatingWebhook{Name: "w", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc}, NamespaceSelector: &metav1.LabelSelector{}}, wantErr: "webhook w: namespaceSelector"},
		"match conditions":   {hook: admissionregistrationv1.ValidatingWebhook{Name: "w", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc}, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "true"}}}, wantErr: "matchConditions"},
	} {
		t.Run(name, func(t *testing.T) {
			vwc := admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{tc.hook}}
			defs, err := webhookDefinitions(vwc, d)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := defs[0]; got.ContainerPort != 9443 || got.DeploymentName != "op" || *got.WebhookPath != path {
				t.Errorf("got %+v, want port 9443, deployment op, path %s", got, path)
			}
		})
	}
}
