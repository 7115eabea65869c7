package operand

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Process is an Operand that runs a component as a child process (the
// archgate binary, or the simulator's own scheduler command), the way a
// cluster runs it: its own address space, garbage collector and CPU account,
// so that a report can say what each component costs.
type Process struct {
	// Name names the component in errors and in the resource figures.
	Name string
	// Command is the program and its arguments.
	Command []string
	// Env is the process's environment; nil inherits the simulator's.
	Env []string
	// ReadyURL is polled (GET until 200) after each start; "" means ready
	// once started.
	ReadyURL string
	// MetricsURL is scraped into Counters; "" for none.
	MetricsURL string
	// MetricsAuth, when set, is how an https MetricsURL is scraped: the
	// bearer token and the CA the archgate components' authenticated
	// metrics endpoints want. Nil scrapes without either (the scheduler).
	MetricsAuth *MetricsAuth
	// PprofURL is the base of the process's net/http/pprof handlers
	// (http://host:port/debug/pprof); "" when it serves none.
	PprofURL string
	// Counters receives the scraped counters, kept across restarts; nil for
	// none.
	Counters *Counters
	// LogPath receives the process's stdout and stderr (appended).
	LogPath string
	// OnStart, when set, is called with the PID of each started process.
	OnStart func(pid int)
	// ReadyTimeout bounds the wait for readiness; default 60s.
	ReadyTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL;
	// default 30s.
	StopTimeout time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan error
	retire func()
}

var _ Operand = (*Process)(nil)

// Start implements Operand: it starts the process and waits until ReadyURL
// answers 200.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.Name)
	}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	cmd := exec.Command(p.Command[0], p.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = p.Env
	// The component dies with the simulator, whatever way it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("%s: starting %s: %w", p.Name, p.Command[0], err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		logFile.Close()
		done <- err
	}()
	if p.OnStart != nil {
		p.OnStart(cmd.Process.Pid)
	}
	if err := p.waitReady(ctx, done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s: %w (log: %s)", p.Name, err, p.LogPath)
	}
	p.cmd, p.done = cmd, done
	if p.Counters != nil && p.MetricsURL != "" {
		p.retire = p.Counters.Add(newScraper(p.MetricsURL, p.MetricsAuth).gather)
	}
	return nil
}

// waitReady polls ReadyURL until it answers 200, the process exits or the
// timeout passes.
func (p *Process) waitReady(ctx context.Context, done chan error) error {
	timeout := p.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	if p.ReadyURL == "" {
		return nil
	}
	var last error
	for {
		last = get(ctx, client, p.ReadyURL, io.Discard)
		if last == nil {
			return nil
		}
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("exited before it was ready: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, last)
		}
	}
}

// Stop implements Operand: a graceful stop (SIGTERM, then SIGKILL after
// StopTimeout), after a last scrape of the counters.
func (p *Process) Stop() { p.stop(syscall.SIGTERM) }

// Kill ends the process with SIGKILL, as a crash or an OOM kill would:
// nothing is released, and counters since the last scrape are lost.
func (p *Process) Kill() { p.stop(syscall.SIGKILL) }

func (p *Process) stop(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	if p.retire != nil && sig != syscall.SIGKILL {
		p.retire()
	}
	_ = p.cmd.Process.Signal(sig)
	timeout := p.StopTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	if p.retire != nil && sig == syscall.SIGKILL {
		p.retire() // keeps the last successful scrape
	}
	p.cmd, p.done, p.retire = nil, nil, nil
}

// Pid returns the running process's PID, 0 when it does not run.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Err returns an error if the process exited on its own, without blocking;
// nil while it runs.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return nil
	}
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s: exited while it should run: %v (log: %s)", p.Name, err, p.LogPath)
	default:
		return nil
	}
}

// MetricsAuth is how Prometheus scrapes the archgate components: over HTTPS,
// verifying the server's certificate against CA, with the bearer token of a
// ServiceAccount bound to the metrics reader role (operator/pkg/testing/metricsreader).
type MetricsAuth struct {
	// Token is the bearer token sent with every scrape.
	Token string
	// CA is the PEM bundle the metrics server's certificate is verified
	// against.
	CA []byte
	// SkipVerify scrapes without verifying the server's certificate: the
	// components the operator deploys serve certificates for their metrics
	// Services' names, which the simulator, scraping local ports, does not
	// reach them by; the token still authenticates the scrape.
	SkipVerify bool
}

// client returns an HTTP client that trusts a's CA (the system roots
// without one) and sends a's token, built by client-go's rest package as
// for any API client; a nil a sends nothing.
func (a *MetricsAuth) client(timeout time.Duration) (*http.Client, error) {
	if a == nil {
		return &http.Client{Timeout: timeout}, nil
	}
	return rest.HTTPClientFor(&rest.Config{Timeout: timeout, BearerToken: a.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: a.CA, Insecure: a.SkipVerify}})
}

// scraper reads a /metrics endpoint and remembers the last good reading, so
// a process that is gone still counts what it did up to then.
type scraper struct {
	url    string
	client *http.Client
	err    error // building client
	mu     sync.Mutex
	last   []*dto.MetricFamily
}

func newScraper(url string, auth *MetricsAuth) *scraper {
	c, err := auth.client(5 * time.Second)
	return &scraper{url: url, client: c, err: err}
}

func (s *scraper) gather() []*dto.MetricFamily {
	var buf bytes.Buffer
	err := s.err
	if err == nil {
		err = get(context.Background(), s.client, s.url, &buf)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		if families, perr := ParseFamilies(&buf); perr == nil {
			s.last = families
		}
	}
	return s.last
}

// ParseFamilies parses the Prometheus text format.
func ParseFamilies(r io.Reader) ([]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	return list, nil
}

// Families scrapes the process's /metrics.
func (p *Process) Families(ctx context.Context) ([]*dto.MetricFamily, error) {
	c, err := p.MetricsAuth.client(5 * time.Second)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := get(ctx, c, p.MetricsURL, &buf); err != nil {
		return nil, err
	}
	return ParseFamilies(&buf)
}

// get GETs url into w and fails unless the answer is 200.
func get(ctx context.Context, c *http.Client, url string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// errNotRunning is returned for a profile of a component that does not run.
var errNotRunning = errors.New("not running")

// Profile writes a pprof profile of the running process to w: "profile"
// (CPU over the given duration) or "heap".
func (p *Process) Profile(ctx context.Context, kind string, d time.Duration, w io.Writer) error {
	if p.PprofURL == "" || p.Pid() == 0 {
		return fmt.Errorf("%s: %w", p.Name, errNotRunning)
	}
	url := p.PprofURL + "/" + kind
	if kind == "profile" {
		url += fmt.Sprintf("?seconds=%d", max(int(d.Seconds()), 1))
	}
	return get(ctx, &http.Client{Timeout: d + 30*time.Second}, url, w)
}
