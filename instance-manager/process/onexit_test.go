package process

import (
	"errors"
	"sync"
	"testing"
)

// TestOnExitRunsBeforeTheExitIsPublished: the hook sees the exited
// process's spec and meta, and no watcher learns of the exit before the
// hook returned.
func TestOnExitRunsBeforeTheExitIsPublished(t *testing.T) {
	var mu sync.Mutex
	var seen []Info
	release := make(chan struct{})
	m, fe, fh := newFakeManager(t, func(c *Config) {
		c.OnExit = func(i Info) {
			<-release
			mu.Lock()
			seen = append(seen, i)
			mu.Unlock()
		}
	})
	fh.setAll(true)
	sub := m.Subscribe()
	if _, err := m.Create(spec("e-1", 1), Meta{Type: "engine", VolumeName: "vol"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "running", named("e-1", StateRunning, false))
	fe.run(0).exitWith(errors.New("signal: killed"))
	if got, _ := m.Get("e-1"); got.Status.State != StateRunning {
		t.Fatalf("state %s while the exit hook runs, want running", got.Status.State)
	}
	close(release)
	waitEvent(t, sub, "error", named("e-1", StateError, false))
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Spec.Name != "e-1" || seen[0].Meta.VolumeName != "vol" || seen[0].Meta.Type != "engine" {
		t.Fatalf("hook saw %+v", seen)
	}
}
