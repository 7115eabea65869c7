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

// Package collectors registers the Prometheus collectors of archgate's components.
package collectors

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector with r and returns the errors of those that failed,
// joined: client_golang offers Register (one collector) and MustRegister (which panics), and
// a component that starts again in the same process must see every conflict, not only the first.
func Register(r prometheus.Registerer, collectors ...prometheus.Collector) error {
	var errs []error
	for _, c := range collectors {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}
