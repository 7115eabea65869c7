package knownimages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
)

func entry(ref string, archs ...string) inspect.KnownImage {
	return inspect.KnownImage{Ref: ref, Architectures: archs}
}

func entries(n int) []inspect.KnownImage {
	out := make([]inspect.KnownImage, n)
	for i := range out {
		out[i] = entry(fmt.Sprintf("registry.example/app/svc-%04d:v1", i), "amd64", "arm64")
	}
	return out
}

func TestEncodeKeepsTheNewestEntriesWithinTheLimit(t *testing.T) {
	tests := map[string]struct {
		n, maxBytes int
		wantAll     bool
	}{
		"everything fits":       {n: 50, maxBytes: MaxDataBytes, wantAll: true},
		"nothing to publish":    {n: 0, maxBytes: 100, wantAll: true},
		"half fits":             {n: 200, maxBytes: 8 << 10},
		"not even one entry":    {n: 3, maxBytes: 10},
		"limit of one document": {n: 20_000, maxBytes: MaxDataBytes},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := entries(tc.n)
			data, kept, err := Encode(in, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			var doc document
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatalf("document does not parse: %v", err)
			}
			if len(doc.Entries) != kept {
				t.Fatalf("kept = %d, document has %d entries", kept, len(doc.Entries))
			}
			if tc.wantAll && kept != tc.n {
				t.Fatalf("kept %d of %d entries, want all", kept, tc.n)
			}
			if !tc.wantAll && (kept >= tc.n || (kept > 0 && len(data) > tc.maxBytes)) {
				t.Fatalf("kept %d of %d entries in %d bytes, limit %d", kept, tc.n, len(data), tc.maxBytes)
			}
			if kept > 0 && !slices.ContainsFunc(doc.Entries, func(e inspect.KnownImage) bool { return e.Ref == in[len(in)-1].Ref }) {
				t.Errorf("the most recently used entry %s was left out", in[len(in)-1].Ref)
			}
		})
	}
}

// TestEncodeIsIndependentOfRecency checks that the same entries in another recency order
// encode to the same bytes (the publisher then writes nothing), and that a document over the
// limit still keeps the most recently used entries, whatever their names.
func TestEncodeIsIndependentOfRecency(t *testing.T) {
	in := entries(200)
	reversed := slices.Clone(in)
	slices.Reverse(reversed)
	a, _, err := Encode(in, MaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Encode(reversed, MaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("the same entries in another order encode differently:\n%.200s\n%.200s", a, b)
	}
	data, kept, err := Encode(reversed, 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 0, kept)
	for _, e := range reversed[len(reversed)-kept:] {
		want = append(want, e.Ref)
	}
	slices.Sort(want)
	got := make([]string, 0, len(doc.Entries))
	for _, e := range doc.Entries {
		got = append(got, e.Ref)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept entries (-want the %d most recent, sorted +got):\n%s", kept, diff)
	}
}

func TestParseRejectsInvalidDocuments(t *testing.T) {
	tests := map[string]struct {
		data    string
		wantErr string
	}{
		"not JSON":          {data: "{", wantErr: "parsing key images.json"},
		"short reference":   {data: `{"entries":[{"ref":"nginx"}]}`, wantErr: `entries[0].ref "nginx" is not a canonical`},
		"invalid reference": {data: `{"entries":[{"ref":"Bad:Ref:"}]}`, wantErr: `entries[0].ref "Bad:Ref:"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestIndexLookup(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	doc, _, err := Encode([]inspect.KnownImage{
		{Ref: "docker.io/library/nginx:latest", Architectures: []string{"amd64", "arm64"}, Expires: ptr.To(now.Add(time.Minute))},
		{Ref: "registry.example/old:v1", Architectures: []string{"amd64"}, Expires: ptr.To(now)},
		{Ref: "registry.example/bundle@sha256:" + strings.Repeat("a", 64), AnyArchitecture: true},
	}, MaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Parse(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		image   string
		want    []string
		wantAny bool
		wantOK  bool
	}{
		"short name of a known image": {image: "nginx", want: []string{"amd64", "arm64"}, wantOK: true},
		"canonical name":              {image: "docker.io/library/nginx:latest", want: []string{"amd64", "arm64"}, wantOK: true},
		"expired at now":              {image: "registry.example/old:v1"},
		"digest kept until evicted":   {image: "registry.example/bundle@sha256:" + strings.Repeat("a", 64), wantAny: true, wantOK: true},
		"unknown tag":                 {image: "nginx:1.27"},
		"invalid reference":           {image: "Bad:Ref:"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ix.Lookup(tc.image, now)
			if ok != tc.wantOK {
				t.Fatalf("Lookup(%q) ok = %v, want %v", tc.image, ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if strings.Join(got.Architectures, ",") != strings.Join(tc.want, ",") || got.AnyArchitecture != tc.wantAny {
				t.Errorf("Lookup(%q) = %v any=%v, want %v any=%v", tc.image, got.Architectures, got.AnyArchitecture, tc.want, tc.wantAny)
			}
		})
	}
	var empty *Index
	if _, ok := empty.Lookup("nginx", now); ok {
		t.Error("a nil index knows an image")
	}
}

func TestStoreForgetsEverythingOnAnInvalidDocument(t *testing.T) {
	s := NewStore(types.NamespacedName{Namespace: "ns", Name: DefaultConfigMapName}, logr.Discard())
	valid, _, _ := Encode([]inspect.KnownImage{entry("docker.io/library/nginx:latest", "amd64")}, MaxDataBytes)
	s.Set(&corev1.ConfigMap{Data: map[string]string{DataKey: string(valid)}})
	if _, ok := s.Lookup("nginx", time.Now()); !ok {
		t.Fatal("the store does not know a published image")
	}
	s.Set(&corev1.ConfigMap{Data: map[string]string{DataKey: "{"}})
	if _, ok := s.Lookup("nginx", time.Now()); ok || s.index.Load().Len() != 0 {
		t.Fatal("the store still serves entries after an invalid document")
	}
}

// cachedEntry is a cache entry and the identity that read it.
type cachedEntry struct {
	image inspect.KnownImage
	id    credentials.Identity
}

// staticSource serves its entries as inspect.CachingInspector.KnownImages does; its change
// counter is its length (the tests only append).
type staticSource []cachedEntry

func (s *staticSource) Changes() uint64 { return uint64(len(*s)) }

func (s *staticSource) KnownImages(identities func(ref string) []credentials.Identity) []inspect.KnownImage {
	var out []inspect.KnownImage
	for _, e := range *s {
		if slices.Contains(identities(e.image.Ref), e.id) {
			out = append(out, e.image)
		}
	}
	return out
}

func TestPublisherWritesOnlyChangesAndWhatPodsWithoutPullSecretsUse(t *testing.T) {
	key := types.NamespacedName{Namespace: "archgate", Name: DefaultConfigMapName}
	applies := 0
	c := fake.NewClientBuilder().WithObjects(emptyConfigMap(key)).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			applies++
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	global := credentials.NewKeyring(mustConfig(t, `{"auths":{"private.example":{"auth":"dTpw"}}}`))
	globalCreds, err := global.Lookup("private.example/team/app:v2")
	if err != nil || len(globalCreds) != 1 {
		t.Fatalf("global keyring lookup = %v, %v", globalCreds, err)
	}
	src := &staticSource{
		{image: entry("docker.io/library/nginx:latest", "amd64"), id: credentials.Anonymous},
		// Read anonymously, but a pod without pull secrets is inspected with the global secret.
		{image: entry("private.example/team/app:v1", "arm64"), id: credentials.Anonymous},
		{image: entry("private.example/team/app:v2", "arm64"), id: globalCreds[0].Identity()},
		// Read with a pod's own credential.
		{image: entry("docker.io/team/private:v1", "s390x"), id: "pod-secret"},
	}
	p := NewPublisher(PublisherOptions{
		Client: c, Key: key, Source: src, Log: logr.Discard(),
		GlobalKeyring: func(context.Context) (*credentials.Keyring, error) { return global, nil },
	})
	ctx := t.Context()
	for range 2 {
		if err := p.Publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if applies != 1 {
		t.Fatalf("%d writes for one unchanged content, want 1", applies)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	ix, err := Parse(cm.Data[DataKey])
	if err != nil {
		t.Fatal(err)
	}
	for image, want := range map[string]bool{
		"nginx":                       true,
		"private.example/team/app:v1": false,
		"private.example/team/app:v2": true,
		"docker.io/team/private:v1":   false,
	} {
		if _, ok := ix.Lookup(image, time.Now()); ok != want {
			t.Errorf("%s published = %t, want %t", image, ok, want)
		}
	}
	*src = append(*src, cachedEntry{image: entry("docker.io/library/busybox:latest", "s390x"), id: credentials.Anonymous})
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if applies != 2 {
		t.Fatalf("%d writes after a change, want 2", applies)
	}
}

// emptyConfigMap is a ConfigMap as the operator creates it for the publisher.
func emptyConfigMap(key types.NamespacedName) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// TestPublisherWritesOnlyTheData: an existing ConfigMap gets its data replaced (a key no longer
// published is gone) and keeps the rest; a missing one is created where the client may, and a
// failed write names the ConfigMap.
func TestPublisherWritesOnlyTheData(t *testing.T) {
	key := types.NamespacedName{Namespace: "archgate", Name: DefaultConfigMapName}
	src := &staticSource{{image: entry("docker.io/library/nginx:latest", "amd64"), id: credentials.Anonymous}}
	publish := func(c client.Client) error {
		return NewPublisher(PublisherOptions{Client: c, Key: key, Source: src, Log: logr.Discard()}).Publish(t.Context())
	}
	existing := emptyConfigMap(key)
	existing.Data = map[string]string{"stale": "x"}
	c := fake.NewClientBuilder().WithObjects(existing).Build()
	if err := publish(c); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	if _, stale := cm.Data["stale"]; stale || len(cm.Data) != 1 || cm.Data[DataKey] == "" {
		t.Errorf("data after publishing into an existing ConfigMap: %v; want only %s", slices.Collect(maps.Keys(cm.Data)), DataKey)
	}

	c = fake.NewClientBuilder().Build()
	if err := publish(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), key, cm); err != nil || cm.Data[DataKey] == "" {
		t.Errorf("a missing ConfigMap: %v, data %v; want it created with the data", err, cm.Data)
	}

	forbidden := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return apierrors.NewForbidden(corev1.Resource("configmaps"), key.Name, errors.New("not allowed"))
		},
	}).Build()
	if err := publish(forbidden); err == nil || !strings.Contains(err.Error(), key.String()) {
		t.Errorf("a missing ConfigMap the client may not create: %v; want an error naming %s", err, key)
	}
}

func mustConfig(t *testing.T, dockerConfigJSON string) *credentials.Config {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "archgate", Name: "global"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfigJSON)},
	}
	cfg, err := credentials.ParseSecret(secret, true)
	if err != nil {
		t.Fatal(err)
	}
	return &cfg
}

func TestPublisherLeavesTheOperatorsMetadata(t *testing.T) {
	key := types.NamespacedName{Namespace: "archgate", Name: DefaultConfigMapName}
	labels := map[string]string{"app.kubernetes.io/managed-by": "archgate-operator"}
	c := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: labels},
	}).Build()
	src := &staticSource{{image: entry("docker.io/library/nginx:latest", "amd64"), id: credentials.Anonymous}}
	if err := NewPublisher(PublisherOptions{Client: c, Key: key, Source: src, Log: logr.Discard()}).Publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cm.Labels, labels) || cm.Data[DataKey] == "" {
		t.Errorf("after publishing: labels %v, data %d bytes; want the operator's labels kept and the data written", cm.Labels, len(cm.Data[DataKey]))
	}
}

// countingSource counts the copies of the cache a publisher asks for.
type countingSource struct {
	staticSource
	copies int
}

func (s *countingSource) KnownImages(identities func(ref string) []credentials.Identity) []inspect.KnownImage {
	s.copies++
	return s.staticSource.KnownImages(identities)
}

func TestPublisherSkipsAnUnchangedCache(t *testing.T) {
	key := types.NamespacedName{Namespace: "archgate", Name: DefaultConfigMapName}
	src := &countingSource{staticSource: staticSource{{image: entry("docker.io/library/nginx:latest", "amd64"), id: credentials.Anonymous}}}
	p := NewPublisher(PublisherOptions{Client: fake.NewClientBuilder().WithObjects(emptyConfigMap(key)).Build(), Key: key, Source: src, Log: logr.Discard()})
	for range 3 {
		if err := p.Publish(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if src.copies != 1 {
		t.Errorf("%d copies of an unchanged cache, want 1", src.copies)
	}
	src.staticSource = append(src.staticSource, cachedEntry{image: entry("docker.io/library/busybox:latest", "s390x"), id: credentials.Anonymous})
	if err := p.Publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	if src.copies != 2 {
		t.Errorf("%d copies after a change, want 2", src.copies)
	}
}

// FuzzParse feeds arbitrary documents to Parse (the ConfigMap is in the operator's namespace,
// but the webhook must survive any content): nothing may panic, and a document it accepts
// encodes back to one that parses to the same entries, each found by Lookup while live.
func FuzzParse(f *testing.F) {
	live := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	seed, _, err := Encode([]inspect.KnownImage{
		{Ref: "docker.io/library/nginx:latest", Architectures: []string{"amd64", "arm64"}, Expires: &live},
		{Ref: "r.example:5000/team/app@sha256:" + strings.Repeat("a", 64), AnyArchitecture: true},
	}, MaxDataBytes)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(seed), `{"entries":[]}`, `{"entries":[{"ref":"nginx"}]}`, `{"entries":null}`, `[]`, `{`, ""} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data string) {
		ix, err := Parse(data)
		if err != nil {
			return
		}
		entries := slices.Collect(maps.Values(ix.entries))
		again, kept, err := Encode(entries, 1<<30)
		if err != nil || kept != len(entries) {
			t.Fatalf("re-encoding %d entries: kept %d, %v", len(entries), kept, err)
		}
		ix2, err := Parse(string(again))
		if err != nil || ix2.Len() != ix.Len() {
			t.Fatalf("the re-encoded document parses to %d entries (%v), want %d", ix2.Len(), err, ix.Len())
		}
		for ref, e := range ix.entries {
			_, ok := ix.Lookup(ref, now)
			if live := e.Expires == nil || now.Before(*e.Expires); ok != live {
				t.Errorf("Lookup(%q) found %v, want %v (expires %v)", ref, ok, live, e.Expires)
			}
		}
	})
}

// TestPublisherWritesParameters: with Parameters, the leader also writes the params ConfigMap:
// every written form of each published image (keys escaped), and the namespaces with
// PodPlacementConfigs; a new configuration alone is written on the next tick, an unchanged
// content is not written again.
func TestPublisherWritesParameters(t *testing.T) {
	scheme := runtime.NewScheme()
	builder := runtime.NewSchemeBuilder(v1beta1.AddToScheme, corev1.AddToScheme)
	if err := builder.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ppc := func(ns, name string) *v1beta1.PodPlacementConfig {
		return &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	applies := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ppc("team-a", "x"), ppc("team-a", "y"),
		emptyConfigMap(types.NamespacedName{Namespace: "archgate", Name: DefaultConfigMapName}),
		emptyConfigMap(types.NamespacedName{Namespace: "archgate", Name: DefaultParametersConfigMapName})).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			applies++
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	src := &staticSource{
		{image: entry("docker.io/library/nginx:latest", "arm64", "amd64"), id: credentials.Anonymous},
		{image: entry("quay.io/team/app:v1", "s390x"), id: "pod-secret"},
	}
	p := NewPublisher(PublisherOptions{
		Client: c, Key: types.NamespacedName{Namespace: "archgate", Name: DefaultConfigMapName}, Source: src, Log: logr.Discard(),
		Parameters: DefaultParametersConfigMapName, Configs: c,
	})
	ctx := t.Context()
	get := func() map[string]string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "archgate", Name: DefaultParametersConfigMapName}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	for range 2 {
		if err := p.Publish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if applies != 2 {
		t.Fatalf("%d writes for one content (the two ConfigMaps), want 2", applies)
	}
	want := map[string]string{"_nteam-a": "2"}
	for _, form := range inspect.WrittenForms("docker.io/library/nginx:latest") {
		want[ParameterKey(form)] = "amd64,arm64"
	}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	if err := c.Create(ctx, ppc("team-b", "z")); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	want["_nteam-b"] = "1"
	if diff := cmp.Diff(want, get()); diff != "" || applies != 3 {
		t.Errorf("after a new PodPlacementConfig, %d writes (want 3); params (-want +got):\n%s", applies, diff)
	}
}

func TestParameterKey(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                          "nginx",
		"docker.io/library/nginx:latest": "docker.io_slibrary_snginx_clatest",
		"registry.example:5000/team_a/app@sha256:ab": "registry.example_c5000_steam__a_sapp_asha256_cab",
	} {
		if got := ParameterKey(image); got != want {
			t.Errorf("ParameterKey(%q) = %q, want %q", image, got, want)
		}
	}
}
