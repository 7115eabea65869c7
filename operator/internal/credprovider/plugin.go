package credprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/archgate/archgate/operator/internal/credentials"
)

const (
	requestKind  = "CredentialProviderRequest"
	responseKind = "CredentialProviderResponse"
	// maxStderr bounds how much of a failing plugin's stderr goes into the error.
	maxStderr = 512
)

// response is a plugin's answer for one image: its credentials and how long to keep them.
type response struct {
	config   credentials.Config
	keyType  credentialproviderv1.PluginCacheKeyType
	duration time.Duration
}

// plugin is one configured provider and its executable.
type plugin struct {
	provider kubeletconfigv1.CredentialProvider
	path     string
}

func newPlugin(p kubeletconfigv1.CredentialProvider, binDir string) plugin {
	return plugin{provider: p, path: filepath.Join(binDir, p.Name)}
}

// matches reports whether the plugin is to be asked for the image (one of matchImages applies).
func (p plugin) matches(image string) bool {
	for _, m := range p.provider.MatchImages {
		if ok, err := credentials.MatchImage(m, image); err == nil && ok {
			return true
		}
	}
	return false
}

// run executes the plugin for the repository (the image without tag or digest, as the kubelet
// sends it) with the configured arguments and environment, on top of the controller's own
// environment as the kubelet does, and decodes its response. ctx bounds the execution.
func (p plugin) run(ctx context.Context, repository string) (response, error) {
	req, err := json.Marshal(credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: p.provider.APIVersion, Kind: requestKind},
		Image:    repository,
	})
	if err != nil {
		return response{}, err
	}
	cmd := exec.CommandContext(ctx, p.path, p.provider.Args...)
	cmd.Env = os.Environ()
	for _, e := range p.provider.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	// A plugin that ignores SIGKILL's pipes still lets Wait return.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return response{}, fmt.Errorf("running %s: %w", p.path, ctx.Err())
		}
		return response{}, fmt.Errorf("running %s: %w%s", p.path, err, stderrTail(stderr.Bytes()))
	}
	return p.decode(stdout.Bytes())
}

// decode checks the response the way the kubelet does: same apiVersion as the request, the
// response kind, a known cache key type; then turns its auth map into a credentials.Config.
func (p plugin) decode(out []byte) (response, error) {
	var resp credentialproviderv1.CredentialProviderResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		// The output may hold credentials: describe the error without quoting it.
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return response{}, fmt.Errorf("response is not JSON (at byte %d)", syntax.Offset)
		}
		return response{}, errors.New("response does not decode as a CredentialProviderResponse")
	}
	if resp.APIVersion != p.provider.APIVersion || resp.Kind != responseKind {
		return response{}, fmt.Errorf("response is %s %s, want %s %s", resp.APIVersion, resp.Kind, p.provider.APIVersion, responseKind)
	}
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType, credentialproviderv1.RegistryPluginCacheKeyType, credentialproviderv1.GlobalPluginCacheKeyType:
	default:
		return response{}, fmt.Errorf("response cacheKeyType %q is not Image, Registry or Global", resp.CacheKeyType)
	}
	duration := p.provider.DefaultCacheDuration.Duration
	if resp.CacheDuration != nil {
		duration = max(resp.CacheDuration.Duration, 0)
	}
	auths := make(map[string]credentials.AuthConfig, len(resp.Auth))
	for k, a := range resp.Auth {
		auths[k] = credentials.AuthConfig{Username: a.Username, Password: a.Password}
	}
	cfg, err := credentials.NewConfig(credentials.Source{Plugin: p.provider.Name}, auths)
	if err != nil {
		return response{}, fmt.Errorf("response auth: %w", err)
	}
	return response{config: cfg, keyType: resp.CacheKeyType, duration: duration}, nil
}

// stderrTail is the end of a failing plugin's stderr, for the error message.
func stderrTail(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxStderr {
		b = b[len(b)-maxStderr:]
	}
	return ": " + string(b)
}
