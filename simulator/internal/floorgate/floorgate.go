// Package floorgate is the floor of every placement that holds a pod until its images are
// known: in a floor pass it gates the pods such a design must gate (those naming an image not
// read yet) and releases each with one write as soon as the registry model's time for reading
// its images has passed since the first pod naming them was created (a design that learns of
// pods from the apiserver cannot start earlier). Nothing is inspected or decided: the pod already carries its answer,
// so what a gated pod pays here is what the gate itself costs (the registry's time, the
// release write, the scheduler taking released pods together), and what archgate pays beyond
// it is archgate's own.
package floorgate

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Options configure a Gate.
type Options struct {
	// Delay is how long reading image ref takes: the registry model's time for the requests
	// a reader must send for it.
	Delay func(ref string) time.Duration
	// Release removes the gate from pod i. It is called at most once per gated pod, from a
	// goroutine of its own.
	Release func(i int) error
	// AfterFunc calls f in its own goroutine after d and returns what cancels it; nil is
	// time.AfterFunc (tests pass a clock they advance).
	AfterFunc func(d time.Duration, f func()) (cancel func() bool)
}

// Gate tracks which images are known, which are being read and which gated pods wait on them.
// Its methods are safe for concurrent use.
type Gate struct {
	opts Options

	mu      sync.Mutex
	known   map[string]bool
	reading map[string][]int // image not known yet → pods waiting on it
	started map[string]bool  // images whose read is under way
	waiting map[int]*waiter
	cancels []func() bool
	stopped bool
	errs    []error
	wg      sync.WaitGroup
}

// waiter is one gated pod: the reads it still waits on, and whether its create was answered
// (a pod cannot be released before it exists).
type waiter struct {
	images  []string // the images it waits on
	pending int
	created bool
}

// New returns a Gate that knows no image yet.
func New(opts Options) *Gate {
	if opts.AfterFunc == nil {
		opts.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Gate{opts: opts, known: map[string]bool{}, reading: map[string][]int{}, started: map[string]bool{}, waiting: map[int]*waiter{}}
}

// Admit is called just before pod i's create is sent and reports whether the pod must be
// created gated: some image of it is not known yet.
func (g *Gate) Admit(i int, images []string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := &waiter{}
	for _, ref := range images {
		if g.known[ref] {
			continue
		}
		w.images = append(w.images, ref)
		w.pending++
		g.reading[ref] = append(g.reading[ref], i)
	}
	if w.pending == 0 {
		return false
	}
	g.waiting[i] = w
	return true
}

// Created is called once pod i's create was answered. It starts the read of each image of a
// gated pod not already being read, so that the pods naming one image share its read, as a
// cache with de-duplicated lookups shares it, and releases the pod if nothing is left to read.
func (g *Gate) Created(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.waiting[i]
	if !ok {
		return
	}
	w.created = true
	for _, ref := range w.images {
		if !g.started[ref] && !g.known[ref] && !g.stopped {
			g.started[ref] = true
			g.cancels = append(g.cancels, g.opts.AfterFunc(g.opts.Delay(ref), func() { g.read(ref) }))
		}
	}
	g.releaseIfReady(i, w)
}

// read marks ref known and releases the pods that waited on it alone.
func (g *Gate) read(ref string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known[ref] = true
	for _, i := range g.reading[ref] {
		if w, ok := g.waiting[i]; ok {
			w.pending--
			g.releaseIfReady(i, w)
		}
	}
	delete(g.reading, ref)
	delete(g.started, ref)
}

// releaseIfReady releases pod i once it exists and waits on nothing; g.mu is held.
func (g *Gate) releaseIfReady(i int, w *waiter) {
	if !w.created || w.pending > 0 || g.stopped {
		return
	}
	delete(g.waiting, i)
	g.wg.Go(func() {
		if err := g.opts.Release(i); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("releasing pod %d: %w", i, err))
			g.mu.Unlock()
		}
	})
}

// Stop stops the reads not yet done, waits for the releases under way and returns their
// errors and the number of pods left gated (their reads or creates never finished).
func (g *Gate) Stop() (gated int, err error) {
	g.mu.Lock()
	g.stopped = true
	for _, cancel := range g.cancels {
		cancel()
	}
	gated = len(g.waiting)
	g.mu.Unlock()
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return gated, errors.Join(g.errs...)
}
