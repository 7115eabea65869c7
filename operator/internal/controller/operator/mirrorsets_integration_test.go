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
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/internal/mirrorsets"
)

// mirrorSet is a mirror set object of kind with entries (source, mirrors, policy).
func mirrorSet(kind, name string, entries ...map[string]any) *unstructured.Unstructured {
	items := make([]any, 0, len(entries))
	for _, e := range entries {
		items = append(items, e)
	}
	field := "imageDigestMirrors"
	if kind == mirrorsets.TagKind {
		field = "imageTagMirrors"
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{field: items}}}
	u.SetAPIVersion(mirrorsets.Group + "/" + mirrorsets.Version)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func mirrorEntry(source, policy string, mirrors ...any) map[string]any {
	e := map[string]any{"source": source, "mirrors": mirrors}
	if policy != "" {
		e["mirrorSourcePolicy"] = policy
	}
	return e
}

// dropIn is the mirror sets' drop-in in the operator's registries.conf ConfigMap, "" when the
// key (or the ConfigMap) is absent.
func dropIn() (string, error) {
	cm := &corev1.ConfigMap{}
	switch err := k8s.Get(context.Background(), key(testNamespace, operator.RegistriesConfName), cm); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	return cm.Data[operator.MirrorSetsKey], nil
}

// TestMirrorSets: on a cluster that serves ImageDigestMirrorSet and ImageTagMirrorSet (their
// CRDs installed after the operator started, as a platform upgrade would), the objects a
// cluster admin writes reach the controller as a registries.conf drop-in, a change rolls it,
// an invalid entry is named in Degraded while the rest applies, and deleting the sets removes
// the drop-in.
func TestMirrorSets(t *testing.T) {
	ctx := context.Background()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("testdata", "mirrorsets-crds.yaml")}, ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("installing the mirror set CRDs: %v", err)
	}
	digests := mirrorSet(mirrorsets.DigestKind, "release",
		mirrorEntry("quay.io/openshift-release-dev", mirrorsets.NeverContactSource, "mirror.example/release"))
	tags := mirrorSet(mirrorsets.TagKind, "apps", mirrorEntry("registry.example/team", "", "mirror.example/team"))
	for _, obj := range []*unstructured.Unstructured{digests, tags} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})

	eventually(t, 30*time.Second, "the drop-in holds both sets", func() error {
		got, err := dropIn()
		if err != nil {
			return err
		}
		for _, want := range []string{`prefix = "quay.io/openshift-release-dev"`, "blocked = true", `location = "mirror.example/release"`,
			`pull-from-mirror = "digest-only"`, `prefix = "registry.example/team"`, `pull-from-mirror = "tag-only"`} {
			if !strings.Contains(got, want) {
				return fmt.Errorf("drop-in lacks %s:\n%s", want, got)
			}
		}
		return nil
	})
	dep := getDeployment(t, operator.ControllerComponentName)
	if !containsArg(dep.Spec.Template.Spec.Containers[0].Args, "--registries-conf-dir="+operator.RegistriesConfDropInDir) {
		t.Errorf("controller args %v lack --registries-conf-dir", dep.Spec.Template.Spec.Containers[0].Args)
	}
	if arg := argWithPrefix(dep.Spec.Template.Spec.Containers[0].Args, "--registries-conf="); arg != "" {
		t.Errorf("controller has %s without registriesConfConfigmapRef", arg)
	}
	if err := hasMount(dep.Spec.Template.Spec, "mirror-sets", operator.RegistriesConfDropInDir, operator.MirrorSetsKey); err != nil {
		t.Error(err)
	}
	hash := dep.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]
	if hash == "" {
		t.Error("no linked-objects hash with mirror sets in effect")
	}
	linked := wantCondition(t, v1beta1.ConditionLinkedObjectsExist, metav1.ConditionTrue, v1beta1.ReasonAsExpected)
	for _, want := range []string{"ImageDigestMirrorSet release", "ImageTagMirrorSet apps"} {
		if !strings.Contains(linked.Message, want) {
			t.Errorf("LinkedObjectsExist message %q lacks %q", linked.Message, want)
		}
	}

	// A new mirror rolls the controller; an invalid entry is named and the rest still applies.
	setSpec(t, tags, mirrorEntry("registry.example/team", "", "mirror.example/team", "second.example/team"),
		mirrorEntry("registry.example/Bad", "", "mirror.example/bad"))
	hash = wantHashChange(t, hash)
	got, err := dropIn()
	if err != nil || !strings.Contains(got, "second.example/team") || strings.Contains(got, "mirror.example/bad") {
		t.Errorf("drop-in after the change (err %v):\n%s", err, got)
	}
	degraded := wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonRegistryConfigInvalid)
	if want := `ImageTagMirrorSet apps: spec.imageTagMirrors[1].source "registry.example/Bad"`; !strings.Contains(degraded.Message, want) {
		t.Errorf("Degraded message %q lacks %q", degraded.Message, want)
	}

	// Every set deleted: no drop-in, no flag, no mount, and Degraded clears.
	for _, obj := range []*unstructured.Unstructured{digests, tags} {
		if err := k8s.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "the drop-in is removed", func() error {
		if got, err := dropIn(); err != nil || got != "" {
			return fmt.Errorf("drop-in %q (err %v)", got, err)
		}
		args := controllerArgs(t)
		if arg := argWithPrefix(args, "--registries-conf-dir="); arg != "" {
			return fmt.Errorf("controller still has %s", arg)
		}
		return nil
	})
	if err := hasMount(getDeployment(t, operator.ControllerComponentName).Spec.Template.Spec, "mirror-sets", "", ""); err == nil {
		t.Error("the mirror-sets volume is still mounted")
	}
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas)
	wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
}

// setSpec replaces the entries of obj (re-read, so the write does not conflict).
func setSpec(t *testing.T, obj *unstructured.Unstructured, entries ...map[string]any) {
	t.Helper()
	fresh := mirrorSet(obj.GetKind(), obj.GetName(), entries...)
	current := obj.DeepCopy()
	if err := k8s.Get(context.Background(), key("", obj.GetName()), current); err != nil {
		t.Fatal(err)
	}
	fresh.SetResourceVersion(current.GetResourceVersion())
	if err := k8s.Update(context.Background(), fresh); err != nil {
		t.Fatalf("updating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// wantHashChange waits until the controller's pod template carries a linked-objects hash other
// than before, plays the Deployment controller for the new template, and returns the hash.
func wantHashChange(t *testing.T, before string) string {
	t.Helper()
	var now string
	eventually(t, 30*time.Second, "the controller's pod template rolls", func() error {
		now = getDeployment(t, operator.ControllerComponentName).Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]
		if now == before {
			return errors.New("hash unchanged")
		}
		return nil
	})
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas)
	return now
}

// hasMount checks that the pod spec mounts volume at dir with the ConfigMap key alone; an
// empty dir only asks whether the volume exists.
func hasMount(spec corev1.PodSpec, volume, dir, key string) error {
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume })
	if i < 0 {
		return fmt.Errorf("no volume %s", volume)
	}
	if dir == "" {
		return nil
	}
	v := spec.Volumes[i]
	if v.ConfigMap == nil || v.ConfigMap.Name != operator.RegistriesConfName || len(v.ConfigMap.Items) != 1 || v.ConfigMap.Items[0].Key != key {
		return fmt.Errorf("volume %s is %+v, want ConfigMap %s key %s", volume, v.VolumeSource, operator.RegistriesConfName, key)
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.Name == volume && m.MountPath == dir && m.ReadOnly {
			return nil
		}
	}
	return fmt.Errorf("volume %s not mounted read-only at %s: %v", volume, dir, spec.Containers[0].VolumeMounts)
}
