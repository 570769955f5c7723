package enginetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	e.ctl("add-replica", fresh.addr)
	for deadline := time.Now().Add(time.Minute); e.modes()[fresh.addr] != "RW"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rebuild not done after a minute: %v\n%s", e.modes(), e.ctl("rebuild-status"))
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(src.dir, "volume-snap-*.img"))
	if len(snaps) == 0 {
		t.Fatal("the rebuild left no snapshot on the source")
	}
	for _, s := range snaps {
		name := filepath.Base(s)
		var sums [2]string
		for i, p := range []string{s, filepath.Join(fresh.dir, name)} {
			var rec struct{ Checksum, Method string }
			deadline := time.Now().Add(30 * time.Second)
			for {
				b, err := os.ReadFile(p + ".checksum")
				if err == nil && json.Unmarshal(b, &rec) == nil && rec.Checksum != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: no checksum recorded 30 s after the rebuild (%v)", p, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if rec.Method != "crc64" {
				t.Fatalf("%s: method %q, want crc64", p, rec.Method)
			}
			sums[i] = rec.Checksum
		}
		if sums[0] != sums[1] {
			t.Fatalf("%s: source recorded %s, rebuilt replica %s", name, sums[0], sums[1])
		}
	}
}
