package fakeregistry

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkManifestGet16Clients measures manifest GETs per second through the whole handler chain
// (counters, faults, bearer-free auth, ggcr registry) with 16 concurrent keep-alive clients over plain
// HTTP on loopback.
func BenchmarkManifestGet16Clients(b *testing.B) {
	const clients = 16
	reg := startRegistry(b, Options{})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	url := reg.URL() + "/v2/library/multi/manifests/latest"
	accept := "application/vnd.oci.image.index.v1+json,application/vnd.oci.image.manifest.v1+json"
	var next atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					failed.Add(1)
					return
				}
				req.Header.Set("Accept", accept)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}
