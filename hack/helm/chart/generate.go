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
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Where things are, relative to the repository's root, and what the manifests name.
const (
	chartDir          = "deploy/helm/archgate"
	baseOverlay       = "deploy/overlays/kubernetes"
	monitoringOverlay = "deploy/overlays/monitoring"
	manifestNamespace = "archgate-system"
	operatorName      = "archgate-operator"
	certProviderFlag  = "--cert-provider="
)

// object is one manifest as kustomize renders it.
type object = map[string]any

// build renders a kustomization as `kustomize build` does.
func build(dir string) ([]object, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []object
	for _, r := range resMap.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		var o object
		if err := yaml.Unmarshal(y, &o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func kindOf(o object) string { s, _ := o["kind"].(string); return s }

func nameOf(o object) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

func idOf(o object) string { return kindOf(o) + "/" + nameOf(o) }

// generate rewrites the chart under root from the manifests.
func generate(root string) error {
	base, err := build(filepath.Join(root, baseOverlay))
	if err != nil {
		return err
	}
	withMonitoring, err := build(filepath.Join(root, monitoringOverlay))
	if err != nil {
		return err
	}
	dir := filepath.Join(root, chartDir)
	for _, sub := range []string{"crds", "templates"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"Chart.yaml":               chartYAML,
		".helmignore":              helmignore,
		"templates/_helpers.tpl":   helpers,
		"templates/NOTES.txt":      notes,
		"templates/preflight.yaml": preflight,
	}
	var defaults values
	inBase := map[string]bool{}
	for _, o := range base {
		inBase[idOf(o)] = true
		switch kindOf(o) {
		case "Namespace":
			// Helm installs into the release's namespace (helm install -n NS --create-namespace).
			continue
		case "CustomResourceDefinition":
			y, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			files["crds/"+nameOf(o)+".yaml"] = generatedHeader + string(y)
			continue
		case "Deployment":
			if nameOf(o) == operatorName {
				if defaults, err = operatorDefaults(o); err != nil {
					return err
				}
				punchOperatorHoles(o)
			}
		}
		t, err := template(o)
		if err != nil {
			return err
		}
		files[templateFile(o)] = generatedHeader + t
	}
	for _, o := range withMonitoring {
		if inBase[idOf(o)] {
			continue
		}
		t, err := template(o)
		if err != nil {
			return err
		}
		files[templateFile(o)] = generatedHeader + "{{- if .Values.monitoring.enabled }}\n" + t + "{{- end }}\n"
	}
	v, err := defaults.yaml()
	if err != nil {
		return err
	}
	files["values.yaml"] = v
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func templateFile(o object) string {
	return "templates/" + strings.ToLower(kindOf(o)) + "-" + nameOf(o) + ".yaml"
}

// Holes are placeholders put into an object before it is marshalled, turned into template
// expressions after: a scalar, a block (toYaml of a value) or an optional key (present only
// when its value is set).
const (
	nsHole = "__NAMESPACE__"
)

var (
	braces          = regexp.MustCompile(`\{\{|\}\}`)
	scalarHole      = regexp.MustCompile(`__SCALAR_(\w+)__`)
	blockHole       = regexp.MustCompile(`^(\s*)(\w+): __BLOCK_(\w+)__$`)
	optionalHole    = regexp.MustCompile(`^(\s*)(\w+): __OPTIONAL_(\w+)__$`)
	optionalKeyHole = regexp.MustCompile(`^(\s*)(\w+): __OPTIONALSCALAR_(\w+)__$`)
)

// expression is the value a hole reads.
func expression(hole string) string {
	switch hole {
	case "replicas":
		return ".Values.operator.replicas"
	case "image":
		return `include "archgate.image" .`
	case "imagePullPolicy":
		return ".Values.image.pullPolicy"
	case "imagePullSecrets":
		return ".Values.imagePullSecrets"
	case "certProvider":
		return ".Values.certProvider"
	default: // resources, nodeSelector, tolerations, priorityClassName
		return ".Values.operator." + hole
	}
}

// punchOperatorHoles puts the holes into the operator's Deployment.
func punchOperatorHoles(o object) {
	spec := o["spec"].(map[string]any)
	spec["replicas"] = "__SCALAR_replicas__"
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	pod["imagePullSecrets"] = "__OPTIONAL_imagePullSecrets__"
	pod["nodeSelector"] = "__OPTIONAL_nodeSelector__"
	pod["tolerations"] = "__OPTIONAL_tolerations__"
	pod["priorityClassName"] = "__OPTIONALSCALAR_priorityClassName__"
	c := pod["containers"].([]any)[0].(map[string]any)
	c["image"] = "__SCALAR_image__"
	c["imagePullPolicy"] = "__OPTIONALSCALAR_imagePullPolicy__"
	c["resources"] = "__BLOCK_resources__"
	args := c["args"].([]any)
	for i, a := range args {
		if s, _ := a.(string); strings.HasPrefix(s, certProviderFlag) {
			args[i] = certProviderFlag + "__SCALAR_certProvider__"
		}
	}
}

// template marshals o with its holes and turns them into template expressions.
func template(o object) (string, error) {
	replaceNamespace(o)
	y, err := yaml.Marshal(o)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(string(y), "\n"), "\n") {
		// Braces of the manifests' own templates (Prometheus alert annotations) are text to Helm.
		line = braces.ReplaceAllStringFunc(line, func(b string) string { return `{{ "` + b + `" }}` })
		line = strings.ReplaceAll(line, nsHole, "{{ .Release.Namespace }}")
		if m := blockHole.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(&out, "%s%s:\n%s  {{- toYaml %s | nindent %d }}\n", m[1], m[2], m[1], expression(m[3]), len(m[1])+2)
			continue
		}
		if m := optionalHole.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(&out, "%[1]s{{- with %[3]s }}\n%[1]s%[2]s:\n%[1]s  {{- toYaml . | nindent %[4]d }}\n%[1]s{{- end }}\n",
				m[1], m[2], expression(m[3]), len(m[1])+2)
			continue
		}
		if m := optionalKeyHole.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(&out, "%[1]s{{- with %[3]s }}\n%[1]s%[2]s: {{ . }}\n%[1]s{{- end }}\n", m[1], m[2], expression(m[3]))
			continue
		}
		line = scalarHole.ReplaceAllStringFunc(line, func(h string) string {
			return "{{ " + expression(scalarHole.FindStringSubmatch(h)[1]) + " }}"
		})
		out.WriteString(line + "\n")
	}
	for _, h := range []*regexp.Regexp{scalarHole, blockHole, optionalHole, optionalKeyHole} {
		if h.Match(out.Bytes()) {
			return "", fmt.Errorf("%s: a hole was left in the template", idOf(o))
		}
	}
	return out.String(), nil
}

// replaceNamespace puts nsHole wherever the manifests name archgate's namespace: metadata,
// subjects, webhook services, bindings, and the Service DNS names (<service>.<namespace>.svc)
// the ServiceMonitors verify certificates against.
func replaceNamespace(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok {
				t[k] = namespaceHole(s)
				continue
			}
			replaceNamespace(e)
		}
	case []any:
		for i, e := range t {
			if s, ok := e.(string); ok {
				t[i] = namespaceHole(s)
				continue
			}
			replaceNamespace(e)
		}
	}
}

// namespaceHole returns s with archgate's namespace replaced by nsHole where s is the namespace
// or holds a Service DNS name in it.
func namespaceHole(s string) string {
	if s == manifestNamespace {
		return nsHole
	}
	return strings.ReplaceAll(s, "."+manifestNamespace+".svc", "."+nsHole+".svc")
}

// values are the chart's defaults: the manifests' own values.
type values struct {
	repository   string
	replicas     int64
	resources    any
	certProvider string
}

// operatorDefaults reads the defaults from the operator's Deployment, before its holes.
func operatorDefaults(o object) (values, error) {
	spec := o["spec"].(map[string]any)
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var v values
	image, _ := c["image"].(string)
	repo, tag, ok := strings.Cut(image, ":")
	if !ok || tag != "latest" {
		return v, fmt.Errorf("operator image %q: want the manifests' <repository>:latest", image)
	}
	v.repository = repo
	replicas, ok := spec["replicas"].(float64)
	if !ok {
		return v, fmt.Errorf("operator replicas %v: want a number", spec["replicas"])
	}
	v.replicas = int64(replicas)
	v.resources = c["resources"]
	for _, a := range c["args"].([]any) {
		if s, _ := a.(string); strings.HasPrefix(s, certProviderFlag) {
			v.certProvider = strings.TrimPrefix(s, certProviderFlag)
		}
	}
	if v.certProvider == "" {
		return v, fmt.Errorf("operator args %v: no %s", c["args"], certProviderFlag)
	}
	return v, nil
}

func (v values) yaml() (string, error) {
	res, err := yaml.Marshal(map[string]any{"resources": v.resources})
	if err != nil {
		return "", err
	}
	indented := strings.ReplaceAll(strings.TrimSuffix(string(res), "\n"), "\n", "\n  ")
	return fmt.Sprintf(valuesYAML, v.repository, v.certProvider, v.replicas, cmp.Or(indented, "resources: {}")), nil
}
