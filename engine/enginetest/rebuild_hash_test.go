package enginetest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/syncagent"
)

// TestRebuildHashesLocalCopyAfterwards: a rebuild between two replicas on
// one node copies the snapshot locally without hashing it on the way
// (syncagent SendStats.Unhashed); both agents then hash their file in the
// background, so each snapshot disk file ends with a current .checksum
// record, the same on both sides, for the next fast rebuild to skip it.
func TestRebuildHashesLocalCopyAfterwards(t *testing.T) {
	const size = 16 << 20
	dir := t.TempDir()
	src := startReplica(t, filepath.Join(dir, "r0"), size)
	e := startEngine(t, "vol", size, []*replicaProc{src})
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 0 5M", "-c", "write -P 0x33 9M 2M", e.uri())
	fresh := startReplica(t, filepath.Join(dir, "fresh"), size)
	if out := e.ctl("add-replica", "--wait", fresh.addr); !strings.Contains(out, "complete") {
		t.Fatalf("add-replica: %s", out)
	}
	if m := e.modes(); m[fresh.addr] != "RW" {
		t.Fatalf("modes after the rebuild: %v", m)
	}
	snaps, _ := filepath.Glob(filepath.Join(src.dir, "volume-snap-*.img"))
	if len(snaps) == 0 {
		t.Fatal("the rebuild left no snapshot on the source")
	}
	for _, s := range snaps {
		name := filepath.Base(s)
		a, b := waitRecorded(t, s), waitRecorded(t, filepath.Join(fresh.dir, name))
		if a.Method != "crc64" || a != b {
			t.Fatalf("%s: source recorded %+v, rebuilt replica %+v", name, a, b)
		}
	}
}

// waitRecorded waits up to 30 s for a current checksum record of the disk
// file at path and returns its method and checksum.
func waitRecorded(t *testing.T, path string) syncagent.RecordedMetadata {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec, _, err := syncagent.CurrentRecorded(path)
		if err == nil && rec.Checksum != "" {
			return syncagent.RecordedMetadata{Method: rec.Method, Checksum: rec.Checksum}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no current checksum 30 s after the rebuild (%v)", path, err)
		}
	}
}
