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

// Command rulesfile writes the rule groups of a PrometheusRule (monitoring.coreos.com/v1) as a
// Prometheus rules file, so that promtool checks and tests exactly the rules that are deployed:
//
//	rulesfile deploy/components/monitoring/prometheusrule.yaml > archgate.rules.yaml
//
// spec.groups of a PrometheusRule is the rules file's format; only the wrapping differs.
package main

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// prometheusRule is the part of a PrometheusRule this command reads; the groups are passed
// through untouched.
type prometheusRule struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []any `json:"groups"`
	} `json:"spec"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rulesfile:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: rulesfile <PrometheusRule YAML file>")
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var rule prometheusRule
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		return fmt.Errorf("%s: kind %q with %d groups, want a PrometheusRule with spec.groups", args[0], rule.Kind, len(rule.Spec.Groups))
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
