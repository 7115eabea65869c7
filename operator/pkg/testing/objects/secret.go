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

package objects

import (
	"encoding/base64"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PullSecretBuilder builds a test kubernetes.io/dockerconfigjson Secret.
type PullSecretBuilder struct {
	meta  metav1.ObjectMeta
	auths map[string]dockerAuth
}

// dockerAuth is one registry's entry of a .dockerconfigjson, in the field names the
// operator's credential parser reads.
type dockerAuth struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// PullSecret starts a kubernetes.io/dockerconfigjson Secret with no registries.
func PullSecret(namespace, name string) *PullSecretBuilder {
	return &PullSecretBuilder{meta: metav1.ObjectMeta{Namespace: namespace, Name: name}, auths: map[string]dockerAuth{}}
}

// WithCredentials adds registry's entry with a username and a password.
func (b *PullSecretBuilder) WithCredentials(registry, user, password string) *PullSecretBuilder {
	b.auths[registry] = dockerAuth{Username: user, Password: password}
	return b
}

// WithAuth adds registry's entry in the "auth" form only: base64 of user:password, as
// `docker login` writes it.
func (b *PullSecretBuilder) WithAuth(registry, user, password string) *PullSecretBuilder {
	b.auths[registry] = dockerAuth{Auth: base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	return b
}

// Build returns the Secret built so far.
func (b *PullSecretBuilder) Build() *corev1.Secret {
	// Marshalling a map of plain structs cannot fail.
	cfg, _ := json.Marshal(map[string]any{"auths": b.auths})
	return &corev1.Secret{
		ObjectMeta: *b.meta.DeepCopy(),
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
}
