package floorgate

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// clock runs the reads when the test says so: fire(ref) runs the read of ref.
type clock struct {
	mu      sync.Mutex
	pending map[string]func()
}

// harness is a Gate with a manual clock and a release log.
type harness struct {
	*Gate
	clock    *clock
	mu       sync.Mutex
	released []int
	reads    map[string]int
	// last is the image Delay was last asked about: the Gate asks just before it schedules
	// that image's read, under its lock.
	last string
}

func newHarness() *harness {
	h := &harness{clock: &clock{pending: map[string]func(){}}, reads: map[string]int{}}
	h.Gate = New(Options{
		Delay: func(ref string) time.Duration {
			h.reads[ref]++
			h.last = ref
			return time.Millisecond
		},
		Release: func(i int) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.released = append(h.released, i)
			return nil
		},
		AfterFunc: func(_ time.Duration, f func()) func() bool {
			h.clock.mu.Lock()
			defer h.clock.mu.Unlock()
			h.clock.pending[h.last] = f
			return func() bool { return true }
		},
	})
	return h
}

// fire runs the read of ref.
func (h *harness) fire(t *testing.T, ref string) {
	t.Helper()
	h.clock.mu.Lock()
	f, ok := h.clock.pending[ref]
	delete(h.clock.pending, ref)
	h.clock.mu.Unlock()
	if !ok {
		t.Fatalf("no read of %s under way", ref)
	}
	f()
}

// releasedPods waits for the releases under way (Stop) and returns who was released, sorted.
func (h *harness) releasedPods(t *testing.T) ([]int, int) {
	t.Helper()
	gated, err := h.Stop()
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.released)
	slices.Sort(out)
	return out, gated
}

func TestGate(t *testing.T) {
	type step struct {
		admit   int      // pod admitted with images (-1: none)
		images  []string // its images
		gated   bool     // Admit's answer
		created int      // pod whose create was answered (-1: none)
		read    string   // image whose read ends
	}
	tests := []struct {
		name         string
		steps        []step
		wantReleased []int
		wantGated    int
		wantReads    map[string]int
	}{
		{
			name: "a pod is gated; its image's read starts once it exists and it is released after",
			steps: []step{
				{admit: 0, images: []string{"a"}, gated: true, created: 0},
				{admit: -1, created: -1, read: "a"},
			},
			wantReleased: []int{0},
			wantReads:    map[string]int{"a": 1},
		},
		{
			name: "the first pod created starts the read; a pod not created yet is not released",
			steps: []step{
				{admit: 0, images: []string{"a"}, gated: true, created: -1},
				{admit: 1, images: []string{"a"}, gated: true, created: 1},
				{admit: -1, created: -1, read: "a"},
			},
			wantReleased: []int{1},
			wantGated:    1,
			wantReads:    map[string]int{"a": 1},
		},
		{
			name: "a pod created after its image was read is released at once",
			steps: []step{
				{admit: 0, images: []string{"a"}, gated: true, created: -1},
				{admit: 1, images: []string{"a"}, gated: true, created: 1},
				{admit: -1, created: -1, read: "a"},
				{admit: -1, created: 0},
			},
			wantReleased: []int{0, 1},
			wantReads:    map[string]int{"a": 1},
		},
		{
			name: "pods naming an image being read share the read; later pods are not gated",
			steps: []step{
				{admit: 0, images: []string{"a"}, gated: true, created: 0},
				{admit: 1, images: []string{"a"}, gated: true, created: 1},
				{admit: -1, created: -1, read: "a"},
				{admit: 2, images: []string{"a"}, gated: false, created: 2},
			},
			wantReleased: []int{0, 1},
			wantReads:    map[string]int{"a": 1},
		},
		{
			name: "a pod waits for every image it names",
			steps: []step{
				{admit: 0, images: []string{"a", "b"}, gated: true, created: 0},
				{admit: -1, created: -1, read: "a"},
			},
			wantGated: 1,
			wantReads: map[string]int{"a": 1, "b": 1},
		},
		{
			name: "a pod whose create never answers starts no read and stays counted as gated",
			steps: []step{
				{admit: 0, images: []string{"a"}, gated: true, created: -1},
			},
			wantGated: 1,
			wantReads: map[string]int{"a": 0},
		},
		{
			name: "a pod naming no image is not gated",
			steps: []step{
				{admit: 0, gated: false, created: 0},
			},
			wantReads: map[string]int{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness()
			for _, s := range tc.steps {
				if s.admit >= 0 {
					if got := h.Admit(s.admit, s.images); got != s.gated {
						t.Fatalf("Admit(%d, %v) = %v, want %v", s.admit, s.images, got, s.gated)
					}
				}
				if s.created >= 0 {
					h.Created(s.created)
				}
				if s.read != "" {
					h.fire(t, s.read)
				}
			}
			released, gated := h.releasedPods(t)
			if !slices.Equal(released, tc.wantReleased) || gated != tc.wantGated {
				t.Errorf("released %v, %d left gated; want %v, %d", released, gated, tc.wantReleased, tc.wantGated)
			}
			for ref, n := range tc.wantReads {
				if h.reads[ref] != n {
					t.Errorf("%s read %d times, want %d", ref, h.reads[ref], n)
				}
			}
		})
	}
}
