package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/archgate/archgate/simulator/internal/recorder"
)

// progress reports a pass as it runs: created, gated and bound pods, the
// bind rate over the last seconds and an ETA. On a terminal (live) it redraws
// one line; otherwise (a CI log, a pipe to tee) it prints a line every
// lineEvery, so that a long pass is never silent.
type progress struct {
	w       io.Writer
	live    bool
	pass    string
	total   int
	epoch   time.Time
	last    time.Time
	history []point
}

type point struct {
	at    time.Time
	bound int64
}

// rateWindow is how far back the bind rate looks.
const rateWindow = 5 * time.Second

// Redraw interval of the live line, and interval of the plain lines.
const (
	redrawEvery = 250 * time.Millisecond
	lineEvery   = 10 * time.Second
)

func newProgress(w io.Writer, live bool, pass string, total int, epoch time.Time) *progress {
	return &progress{w: w, live: live, pass: pass, total: total, epoch: epoch}
}

func (p *progress) update(created int64, r recorder.Progress) {
	if p.w == nil {
		return
	}
	now := time.Now()
	p.history = append(p.history, point{now, r.Bound})
	for len(p.history) > 1 && now.Sub(p.history[0].at) > rateWindow {
		p.history = p.history[1:]
	}
	every := redrawEvery
	if !p.live {
		every = lineEvery
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	var rate float64
	if h := p.history[0]; now.Sub(h.at) > 500*time.Millisecond {
		rate = float64(r.Bound-h.bound) / now.Sub(h.at).Seconds()
	}
	eta := "—"
	if remaining := int64(p.total) - r.Bound; rate > 0 && remaining > 0 {
		eta = time.Duration(float64(remaining) / rate * float64(time.Second)).Round(time.Second).String()
	}
	gated := r.Gated - r.Ungated
	drops := ""
	if r.Drops > 0 {
		drops = fmt.Sprintf("  drops %d", r.Drops)
	}
	start, end := "\r\033[K", ""
	if !p.live {
		start, end = "", "\n"
	}
	fmt.Fprintf(p.w, "%s[%s %5.1fs] created %d/%d  gated %d  bound %d  %.0f pods/s  ETA %s%s%s",
		start, p.pass, now.Sub(p.epoch).Seconds(), created, p.total, gated, r.Bound, rate, eta, drops, end)
}

func (p *progress) finish() {
	if p.w != nil && p.live && !p.last.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
