package credprovider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/credprovider"
	"github.com/archgate/archgate/operator/internal/credprovider/credprovidertest"
)

const pluginAPI = "credentialprovider.kubelet.k8s.io/v1"

// binDir holds the fake plugin under the names plugin-a and plugin-b, built once by TestMain.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "credprovider-plugins-")
	if err == nil {
		binDir = dir
		err = credprovidertest.Build(dir, "plugin-a", "plugin-b")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// fixture runs providers named after their role over one build of the fake plugin.
type fixture struct {
	binDir string
	log    string // the plugins' execution log: one line per execution
	clock  *clocktesting.FakePassiveClock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{
		binDir: binDir,
		log:    filepath.Join(t.TempDir(), "executions"),
		clock:  clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0)),
	}
}

// provider returns a configured provider; user names the credential the plugin returns.
func (f *fixture) provider(name, user string, matchImages []string, args ...string) kubeletconfigv1.CredentialProvider {
	return kubeletconfigv1.CredentialProvider{
		Name: name, MatchImages: matchImages, APIVersion: pluginAPI, Args: args,
		DefaultCacheDuration: &metav1.Duration{Duration: time.Minute},
		Env: []kubeletconfigv1.ExecEnvVar{
			{Name: "FAKE_PLUGIN_USERNAME", Value: user}, {Name: "FAKE_PLUGIN_PASSWORD", Value: "secret-" + user},
			{Name: "FAKE_PLUGIN_LOG", Value: f.log},
		},
	}
}

func (f *fixture) new(t *testing.T, opts credprovider.Options, providers ...kubeletconfigv1.CredentialProvider) *credprovider.Provider {
	t.Helper()
	opts.Config = &kubeletconfigv1.CredentialProviderConfig{Providers: providers}
	opts.BinDir, opts.Clock = f.binDir, f.clock
	p, err := credprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// executions returns the images the plugins were run for, in order.
func (f *fixture) executions(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// users returns the usernames of the credentials a keyring of cfgs gives the image.
func users(t *testing.T, image string, cfgs []credentials.Config) []string {
	t.Helper()
	cands, err := credentials.NewKeyring(nil).WithNode(cfgs...).Lookup(image)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cands {
		out = append(out, c.Auth.Username+" from "+c.Source.String())
	}
	return out
}

func TestConfigsMatchImages(t *testing.T) {
	f := newFixture(t)
	p := f.new(t, credprovider.Options{},
		f.provider("plugin-a", "a", []string{"*.dkr.ecr.*.amazonaws.com", "registry.example:5000/team"}),
		f.provider("plugin-b", "b", []string{"registry.example:5000", "*.dkr.ecr.us-east-1.amazonaws.com"}),
	)
	tests := []struct {
		image string
		want  []string
	}{
		{image: "123.dkr.ecr.eu-west-1.amazonaws.com/app:1", want: []string{"a from credential provider plugin-a"}},
		// Both match: credentials in the configuration's order.
		{image: "123.dkr.ecr.us-east-1.amazonaws.com/app@sha256:" + strings.Repeat("a", 64),
			want: []string{"a from credential provider plugin-a", "b from credential provider plugin-b"}},
		// A glob matches one label only.
		{image: "123.dkr.ecr.us-east-1.sub.amazonaws.com/app"},
		// Path prefix and port must match.
		{image: "registry.example:5000/team/app", want: []string{"a from credential provider plugin-a", "b from credential provider plugin-b"}},
		{image: "registry.example:5000/other/app", want: []string{"b from credential provider plugin-b"}},
		{image: "registry.example/team/app"},
		{image: "nginx:1.27"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			cfgs, err := p.Configs(context.Background(), tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if got := users(t, tt.image, cfgs); !slices.Equal(got, tt.want) {
				t.Fatalf("credentials = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConfigsCache(t *testing.T) {
	const (
		app   = "registry.example/team/app:1"
		other = "registry.example/team/other:2"
		far   = "other.example/x:1"
	)
	match := []string{"*.example"}
	tests := []struct {
		name string
		args []string
		// steps: images asked, with the clock advanced by advance before each.
		advance []time.Duration
		images  []string
		want    []string // executions, by repository
	}{
		{name: "Registry key serves the registry's images", args: []string{"--cache-key-type=Registry"},
			advance: []time.Duration{0, 0, 0}, images: []string{app, other, far},
			want: []string{"registry.example/team/app", "other.example/x"}},
		{name: "Image key serves the repository only", args: []string{"--cache-key-type=Image"},
			advance: []time.Duration{0, 0, 0}, images: []string{app, "registry.example/team/app:2", other},
			want: []string{"registry.example/team/app", "registry.example/team/other"}},
		{name: "Global key serves every image", args: []string{"--cache-key-type=Global", "--auth-key=*.example"},
			advance: []time.Duration{0, 0}, images: []string{app, far},
			want: []string{"registry.example/team/app"}},
		{name: "defaultCacheDuration without cacheDuration", args: []string{"--cache-key-type=Global"},
			advance: []time.Duration{0, 59 * time.Second, time.Second}, images: []string{app, app, app},
			want: []string{"registry.example/team/app", "registry.example/team/app"}},
		{name: "cacheDuration overrides the default", args: []string{"--cache-key-type=Global", "--cache-duration=10m"},
			advance: []time.Duration{0, 9 * time.Minute, time.Minute}, images: []string{app, app, app},
			want: []string{"registry.example/team/app", "registry.example/team/app"}},
		{name: "cacheDuration zero caches nothing", args: []string{"--cache-key-type=Global", "--cache-duration=0s"},
			advance: []time.Duration{0, 0}, images: []string{app, app},
			want: []string{"registry.example/team/app", "registry.example/team/app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.new(t, credprovider.Options{}, f.provider("plugin-a", "a", match, tt.args...))
			for i, img := range tt.images {
				f.clock.SetTime(f.clock.Now().Add(tt.advance[i]))
				cfgs, err := p.Configs(context.Background(), img)
				if err != nil {
					t.Fatal(err)
				}
				if got := users(t, img, cfgs); len(got) != 1 {
					t.Fatalf("%s: credentials %q, want the plugin's", img, got)
				}
			}
			if got := f.executions(t); !slices.Equal(got, tt.want) {
				t.Fatalf("executions = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConfigsErrors(t *testing.T) {
	const image = "registry.example/app:1"
	tests := []struct {
		name    string
		args    []string
		binary  string // executable name; the provider's name when empty
		timeout time.Duration
		wantErr string
	}{
		{name: "plugin fails", args: []string{"--fail=no IAM role"}, wantErr: "exit status 1: no IAM role"},
		{name: "timeout", args: []string{"--sleep=1m"}, timeout: 200 * time.Millisecond, wantErr: "context deadline exceeded"},
		{name: "other apiVersion", args: []string{"--response-api-version=credentialprovider.kubelet.k8s.io/v1beta1"},
			wantErr: "response is credentialprovider.kubelet.k8s.io/v1beta1 CredentialProviderResponse, want credentialprovider.kubelet.k8s.io/v1"},
		{name: "bad cacheKeyType", args: []string{"--cache-key-type=Pod"}, wantErr: `cacheKeyType "Pod" is not Image, Registry or Global`},
		{name: "bad auth key", args: []string{"--auth-key=registry.example:port"}, wantErr: `response auth: credential provider plugin-a: entry "registry.example:port": registry key is not`},
		{name: "missing executable", binary: "absent", wantErr: "absent: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			prov := f.provider("plugin-a", "a", []string{"registry.example"}, tt.args...)
			if tt.binary != "" {
				prov.Name = tt.binary
			}
			p := f.new(t, credprovider.Options{Timeout: tt.timeout}, prov)
			cfgs, err := p.Configs(context.Background(), image)
			if err == nil || len(cfgs) != 0 {
				t.Fatalf("Configs = %v, %v; want an error", cfgs, err)
			}
			want := "credential provider " + prov.Name + " for image " + image + ": "
			if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %q, want it to start with %q and contain %q", err, want, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret-a") {
				t.Fatalf("error reveals the credential: %q", err)
			}
		})
	}
}

func TestConfigsRemembersFailures(t *testing.T) {
	f := newFixture(t)
	p := f.new(t, credprovider.Options{ErrorTTL: time.Hour}, f.provider("plugin-a", "a", []string{"registry.example"}, "--fail=down"))
	for range 3 {
		if _, err := p.Configs(context.Background(), "registry.example/app:1"); err == nil {
			t.Fatal("want an error")
		}
	}
	if got := f.executions(t); len(got) != 1 {
		t.Fatalf("executions = %q, want one: the failure is remembered", got)
	}
}

func TestCachedConfigs(t *testing.T) {
	f := newFixture(t)
	p := f.new(t, credprovider.Options{}, f.provider("plugin-a", "a", []string{"registry.example"}))
	if got := p.CachedConfigs(); len(got) != 0 {
		t.Fatalf("CachedConfigs before any run = %v", got)
	}
	if _, err := p.Configs(context.Background(), "registry.example/app:1"); err != nil {
		t.Fatal(err)
	}
	if got := users(t, "registry.example/app", p.CachedConfigs()); len(got) != 1 {
		t.Fatalf("CachedConfigs serve %q, want the plugin's credential", got)
	}
	f.clock.SetTime(f.clock.Now().Add(time.Minute))
	if got := p.CachedConfigs(); len(got) != 0 {
		t.Fatalf("CachedConfigs after expiry = %v", got)
	}
}
