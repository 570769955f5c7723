package controller

import (
	"bytes"
	"testing"

	"github.com/longhorn-go/longhorn/engine/dataconn"
)

// TRIM/UNMAP while a replica rebuilds succeeds and leaves every replica as
// it was (RW and WO alike), so they stay identical; once no replica is WO,
// unmap discards again.
func TestUnmapDuringRebuildSucceedsAndKeepsReplicasIdentical(t *testing.T) {
	const size = 1 << 20
	reps := []*memReplica{newMemReplica(t, size), newMemReplica(t, size)}
	r := newTestReplicator(t, size, reps, dataconn.Options{})
	data := bytes.Repeat([]byte{0x5a}, 64<<10)
	if _, err := r.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	wo := r.list()[1]
	wo.mode.Store(int32(ModeWO))
	if n, err := r.UnmapAt(64<<10, 0); err != nil || n != 64<<10 {
		t.Fatalf("unmap during a rebuild: %d, %v; want success", n, err)
	}
	for i, m := range reps {
		if !bytes.Equal(m.snapshot()[:64<<10], data) {
			t.Fatalf("replica %d changed by an unmap during the rebuild", i)
		}
	}
	wo.mode.Store(int32(ModeRW))
	if _, err := r.UnmapAt(64<<10, 0); err != nil {
		t.Fatal(err)
	}
	for i, m := range reps {
		if !bytes.Equal(m.snapshot()[:64<<10], make([]byte, 64<<10)) {
			t.Fatalf("replica %d not unmapped after the rebuild", i)
		}
	}
}
