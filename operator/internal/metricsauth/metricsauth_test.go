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

package metricsauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
)

// reviewer answers from a table of tokens and counts its reviews.
type reviewer struct {
	decisions map[string]Decision
	err       error
	calls     int
}

func (r *reviewer) Review(_ context.Context, token, verb, path string) (Decision, error) {
	r.calls++
	if r.err != nil {
		return Decision{}, r.err
	}
	if verb != "get" || path != "/metrics" {
		return Decision{Authenticated: true, User: "x"}, nil
	}
	return r.decisions[token], nil
}

func TestFilter(t *testing.T) {
	decisions := map[string]Decision{
		"reader": {Authenticated: true, Allowed: true, User: "system:serviceaccount:monitoring:prometheus"},
		"other":  {Authenticated: true, User: "system:serviceaccount:team:app", Reason: "no RBAC policy matched"},
	}
	for name, tc := range map[string]struct {
		header string
		method string
		err    error
		want   int
	}{
		"a reader's token":             {header: "Bearer reader", want: http.StatusOK},
		"no Authorization header":      {want: http.StatusUnauthorized},
		"basic instead of bearer":      {header: "Basic cmVhZGVyOg==", want: http.StatusUnauthorized},
		"a token the apiserver denies": {header: "Bearer unknown", want: http.StatusUnauthorized},
		"a user without the role":      {header: "Bearer other", want: http.StatusForbidden},
		"a reader posting":             {header: "Bearer reader", method: http.MethodPost, want: http.StatusForbidden},
		"the review fails":             {header: "Bearer reader", err: errors.New("apiserver unreachable"), want: http.StatusInternalServerError},
	} {
		t.Run(name, func(t *testing.T) {
			r := &reviewer{decisions: decisions, err: tc.err}
			h, err := Filter(r)(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				req := httptest.NewRequest(tc.method, "/metrics", nil)
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.want {
					t.Errorf("request %d: status %d, want %d", i+1, rec.Code, tc.want)
				}
			}
			// The second request is answered from the cache (errors are not cached).
			wantCalls := 1
			switch {
			case tc.header == "" || tc.header[:6] != "Bearer":
				wantCalls = 0
			case tc.err != nil:
				wantCalls = 2
			}
			if r.calls != wantCalls {
				t.Errorf("reviews = %d, want %d", r.calls, wantCalls)
			}
		})
	}
}

// TestFilterLimitsUncachedReviews checks that requests with new tokens beyond the limiter's
// burst get 429 without a review, while a token already reviewed is still answered from the
// cache.
func TestFilterLimitsUncachedReviews(t *testing.T) {
	r := &reviewer{decisions: map[string]Decision{"reader": {Authenticated: true, Allowed: true, User: "prometheus"}}}
	h, err := filter(r, rate.NewLimiter(0, 2))(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	if err != nil {
		t.Fatal(err)
	}
	serve := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, step := range []struct {
		token string
		want  int
	}{
		{"reader", http.StatusOK},                // reviewed: one of the burst of two
		{"random-1", http.StatusUnauthorized},    // reviewed: the second
		{"random-2", http.StatusTooManyRequests}, // over the limit: no review
		{"random-3", http.StatusTooManyRequests},
		{"reader", http.StatusOK}, // cached: no review needed
	} {
		rec := serve(step.token)
		if rec.Code != step.want {
			t.Errorf("token %s: status %d, want %d", step.token, rec.Code, step.want)
		}
		if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
			t.Errorf("token %s: 429 without Retry-After", step.token)
		}
	}
	if r.calls != 2 {
		t.Errorf("reviews = %d, want 2 (the limiter's burst)", r.calls)
	}
}
