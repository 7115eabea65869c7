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
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// printData writes v as -o json or -o yaml asks, as kubectl prints objects.
func printData(w io.Writer, v any, output string) error {
	var b []byte
	var err error
	switch output {
	case "json":
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	case "yaml":
		b, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("--output %q: want json or yaml", output)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
