package procfs

import (
	"os"
	"testing"
)

func TestReadSelf(t *testing.T) {
	p, ok := Read(os.Getpid())
	if !ok {
		t.Skip("no /proc")
	}
	if p.PID != os.Getpid() || p.PPID != os.Getppid() || p.Start == 0 || p.RSS <= 0 || p.PeakRSS < p.RSS {
		t.Errorf("unexpected reading %+v", p)
	}
	if !Alive(p.ID) {
		t.Error("Alive(self) = false")
	}
	if Alive(ID{PID: p.PID, Start: p.Start + 1}) {
		t.Error("a PID with another start time must not count as alive")
	}
}
