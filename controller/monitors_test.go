package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestMonitorsRegistry checks the registry's contract: one loop per name,
// restarted only when its target moves, observations per loop, and stopAll
// waits for every loop to return.
func TestMonitorsRegistry(t *testing.T) {
	var started, running atomic.Int32
	m := newMonitors(func(ctx context.Context, target string, record func(string)) {
		started.Add(1)
		running.Add(1)
		defer running.Add(-1)
		record("seen " + target)
		<-ctx.Done()
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	m.ensure("a", "addr1")
	m.ensure("a", "addr1")
	waitFor("first loop", func() bool { return m.latest("a") == "seen addr1" })
	if started.Load() != 1 {
		t.Fatalf("same target started %d loops, want 1", started.Load())
	}
	m.ensure("a", "addr2")
	waitFor("moved loop", func() bool { return m.latest("a") == "seen addr2" })
	waitFor("old loop ends", func() bool { return running.Load() == 1 })
	m.ensure("b", "addr3")
	waitFor("second name", func() bool { return m.latest("b") == "seen addr3" })
	m.stop("a")
	if got := m.latest("a"); got != "" {
		t.Fatalf("latest after stop = %q, want none", got)
	}
	m.stopAll()
	if running.Load() != 0 || started.Load() != 3 {
		t.Fatalf("after stopAll: %d running, %d started; want 0 and 3", running.Load(), started.Load())
	}
}
