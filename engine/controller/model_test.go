package controller_test

import (
	"bytes"
	"context"
	"math/rand"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/replica"
)

// volumeModel is the expected content of the volume and of each snapshot.
type volumeModel struct {
	data  []byte
	snaps map[string][]byte // snapshot name -> content when taken (live, not removed)
}

func (m *volumeModel) names() []string {
	var out []string
	for n := range m.snaps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestRandomizedVolumeOperations runs a random mix of writes (aligned and
// not), reads, snapshots, reverts, snapshot removals, purges (running
// concurrently with I/O) and expansions on a 3-replica volume and compares
// every read, and at the end every replica and a restarted engine, with an
// in-memory model.
func TestRandomizedVolumeOperations(t *testing.T) {
	ops := 1000
	if testing.Short() {
		ops = 300
	}
	const size0 = 4 << 20
	dir := t.TempDir()
	var reps []*testReplica
	for _, n := range []string{"a", "b", "c"} {
		reps = append(reps, startReplica(t, filepath.Join(dir, n), size0, replica.Options{}))
	}
	ctx := context.Background()
	c := newController(t, size0, controller.VolumeOptions{})
	if err := c.Start(ctx, addrs(reps...), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	seed := rng.Int63()
	rng = rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	m := &volumeModel{data: make([]byte, size0), snaps: map[string][]byte{}}
	counts := map[string]int{}
	for i := 0; i < ops; i++ {
		op := pickOp(rng)
		counts[op]++
		modelStep(t, ctx, c, m, rng, op, i)
	}
	t.Logf("operations: %v", counts)
	waitPurged(t, ctx, c)
	size := int64(len(m.data))
	for _, r := range reps {
		if !bytes.Equal(r.readAll(size), m.data) {
			t.Fatalf("replica %s differs from the model", r.addr)
		}
	}
	// Restart the engine on the same replicas: the data is still there.
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	c2 := newController(t, size, controller.VolumeOptions{})
	if err := c2.Start(ctx, addrs(reps...), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if _, err := c2.Backend().ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, m.data) {
		t.Fatal("restarted engine reads differ from the model")
	}
	for _, r := range c2.Replicas() {
		if r.Mode != controller.ModeRW {
			t.Fatalf("replica %s is %v after restart", r.Address, r.Mode)
		}
	}
}

func pickOp(rng *rand.Rand) string {
	x := rng.Intn(100)
	switch {
	case x < 62:
		return "write"
	case x < 74:
		return "read"
	case x < 83:
		return "snapshot"
	case x < 88:
		return "revert"
	case x < 94:
		return "remove"
	case x < 97:
		return "purge"
	default:
		return "expand"
	}
}

func modelStep(t *testing.T, ctx context.Context, c *controller.Controller, m *volumeModel, rng *rand.Rand, op string, i int) {
	t.Helper()
	be := c.Backend()
	size := int64(len(m.data))
	switch op {
	case "write":
		n := 1 + rng.Intn(32768)
		if rng.Intn(2) == 0 {
			n = (1 + rng.Intn(8)) * 4096
		}
		off := rng.Int63n(size - int64(n) + 1)
		if rng.Intn(2) == 0 {
			off &^= 4095
		}
		p := randBytes(rng, n)
		if _, err := be.WriteAt(p, off); err != nil {
			t.Fatalf("op %d write %d+%d: %v", i, off, n, err)
		}
		copy(m.data[off:], p)
	case "read":
		n := 1 + rng.Intn(65536)
		off := rng.Int63n(size - int64(n) + 1)
		got := make([]byte, n)
		if _, err := be.ReadAt(got, off); err != nil {
			t.Fatalf("op %d read: %v", i, err)
		}
		if !bytes.Equal(got, m.data[off:off+int64(n)]) {
			t.Fatalf("op %d: read %d+%d differs from the model", i, off, n)
		}
	case "snapshot":
		if len(m.snaps) >= 200 {
			return
		}
		name, err := c.Snapshot(ctx, "", nil)
		if err != nil {
			t.Fatalf("op %d snapshot: %v", i, err)
		}
		m.snaps[name] = bytes.Clone(m.data)
	case "revert":
		names := m.names()
		if len(names) == 0 {
			return
		}
		name := names[rng.Intn(len(names))]
		if err := c.Revert(ctx, name); err != nil {
			t.Fatalf("op %d revert to %s: %v", i, name, err)
		}
		clear(m.data)
		copy(m.data, m.snaps[name])
	case "remove":
		names := m.names()
		if len(names) == 0 {
			return
		}
		name := names[rng.Intn(len(names))]
		if err := c.RemoveSnapshots(ctx, []string{name}); err != nil {
			t.Fatalf("op %d remove %s: %v", i, name, err)
		}
		delete(m.snaps, name)
	case "purge":
		if err := c.Purge(ctx, true); err != nil {
			t.Fatalf("op %d purge: %v", i, err)
		}
	case "expand":
		if size >= 16<<20 {
			return
		}
		newSize := size + int64(1+rng.Intn(256))*4096
		if err := c.Expand(ctx, newSize); err != nil {
			t.Fatalf("op %d expand: %v", i, err)
		}
		waitExpanded(t, c)
		m.data = append(m.data, make([]byte, newSize-size)...)
	}
}

func waitPurged(t *testing.T, ctx context.Context, c *controller.Controller) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		busy := false
		for addr, st := range c.PurgeStatus(ctx) {
			if st.GetError() != "" {
				t.Fatalf("purge on %s: %s", addr, st.GetError())
			}
			busy = busy || st.GetIsPurging()
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("purge did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
