// Command fakeplugin is a kubelet credential provider plugin for tests: it reads a
// CredentialProviderRequest on stdin and answers credentials for the requested image's
// registry, shaped by its flags and environment, so that tests exercise the exec protocol with
// a real process. It is built by credprovidertest.Build.
//
// Its credentials come from FAKE_PLUGIN_USERNAME and FAKE_PLUGIN_PASSWORD, or, when an argument
// names a file, from that file, read at every execution: a JSON object shaped like the
// azure.json that AKS's acr-credential-provider takes as its argument, whose aadClientId and
// aadClientSecret are the user and password.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	keyType := flag.String("cache-key-type", "Registry", "cacheKeyType of the response.")
	duration := flag.String("cache-duration", "", "cacheDuration of the response; empty leaves it unset.")
	authKey := flag.String("auth-key", "", "Key of the auth entry; empty uses the requested image's registry.")
	apiVersion := flag.String("response-api-version", "", "apiVersion of the response; empty echoes the request's.")
	fail := flag.String("fail", "", "Fail with this message on stderr.")
	sleep := flag.Duration("sleep", 0, "Sleep before answering.")
	flag.Parse()

	var req credentialproviderv1.CredentialProviderRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("decoding the request: %w", err)
	}
	// FAKE_PLUGIN_LOG counts executions: one line per request.
	if log := os.Getenv("FAKE_PLUGIN_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintln(f, req.Image)
		if err := f.Close(); err != nil {
			return err
		}
	}
	time.Sleep(*sleep)
	if *fail != "" {
		return fmt.Errorf("%s", *fail)
	}
	key := *authKey
	if key == "" {
		key, _, _ = strings.Cut(req.Image, "/")
	}
	auth := credentialproviderv1.AuthConfig{Username: os.Getenv("FAKE_PLUGIN_USERNAME"), Password: os.Getenv("FAKE_PLUGIN_PASSWORD")}
	if flag.NArg() > 0 {
		var err error
		if auth, err = readCredentialsFile(flag.Arg(0)); err != nil {
			return err
		}
	}
	resp := credentialproviderv1.CredentialProviderResponse{
		TypeMeta:     metav1.TypeMeta{APIVersion: req.APIVersion, Kind: "CredentialProviderResponse"},
		CacheKeyType: credentialproviderv1.PluginCacheKeyType(*keyType),
		Auth:         map[string]credentialproviderv1.AuthConfig{key: auth},
	}
	if *apiVersion != "" {
		resp.APIVersion = *apiVersion
	}
	if *duration != "" {
		d, err := time.ParseDuration(*duration)
		if err != nil {
			return err
		}
		resp.CacheDuration = &metav1.Duration{Duration: d}
	}
	return json.NewEncoder(os.Stdout).Encode(resp)
}

// readCredentialsFile reads the user and password from an azure.json-shaped file, strictly: a
// test that writes the wrong shape fails loudly instead of sending empty credentials.
func readCredentialsFile(path string) (credentialproviderv1.AuthConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return credentialproviderv1.AuthConfig{}, fmt.Errorf("reading the credentials file: %w", err)
	}
	var file struct {
		AADClientID     string `json:"aadClientId"`
		AADClientSecret string `json:"aadClientSecret"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return credentialproviderv1.AuthConfig{}, fmt.Errorf("parsing the credentials file %s: %w", path, err)
	}
	if file.AADClientID == "" || file.AADClientSecret == "" {
		return credentialproviderv1.AuthConfig{}, fmt.Errorf("credentials file %s: aadClientId and aadClientSecret are required", path)
	}
	return credentialproviderv1.AuthConfig{Username: file.AADClientID, Password: file.AADClientSecret}, nil
}
