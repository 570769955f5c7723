package enginetest

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRebuildBandwidthLimit: a rebuild with
// --replica-rebuilding-bandwidth-limit (MB/s of 2^20 bytes, two RW sources
// sending at once) takes at least its data over the limit, reports the
// limit it applies in the rebuild status while it runs, and leaves the
// replica identical to the others.
func TestRebuildBandwidthLimit(t *testing.T) {
	const size, data, limitMiB = 32 << 20, 12 << 20, 4
	dir := t.TempDir()
	reps := []*replicaProc{startReplica(t, filepath.Join(dir, "r0"), size), startReplica(t, filepath.Join(dir, "r1"), size)}
	e := startEngine(t, "vol", size, reps)
	// Two snapshot layers, so that both sources have a file with data to send.
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 0 6M", e.uri())
	e.ctl("snapshot", "create", "one")
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0xa5 16M 6M", e.uri())
	fresh := startReplica(t, filepath.Join(dir, "fresh"), size)
	t0 := time.Now()
	e.ctl("add-replica", "--replica-rebuilding-bandwidth-limit", "4", fresh.addr)
	var applied int64
	for deadline := time.Now().Add(time.Minute); e.modes()[fresh.addr] != "RW"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rebuild not done after a minute: %v\n%s", e.modes(), e.ctl("rebuild-status"))
		}
		var st struct {
			Status map[string]struct {
				AppliedRebuildingMbps json.Number `json:"appliedRebuildingMbps"`
				Error                 string      `json:"error"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(e.ctl("--json", "rebuild-status")), &st); err != nil {
			t.Fatal(err)
		}
		if s, ok := st.Status[fresh.addr]; ok {
			if s.Error != "" {
				t.Fatalf("rebuild failed: %s", s.Error)
			}
			if n, _ := s.AppliedRebuildingMbps.Int64(); n > 0 {
				applied = n
			}
		}
	}
	took := time.Since(t0)
	t.Logf("%d MiB rebuilt in %v under %d MB/s", data>>20, took.Round(time.Millisecond), limitMiB)
	if applied != limitMiB {
		t.Fatalf("rebuild status showed appliedRebuildingMbps %d, want %d", applied, limitMiB)
	}
	if want := time.Duration(float64(data) / (limitMiB << 20) * float64(time.Second)); took < want*9/10 {
		t.Fatalf("%d MiB rebuilt in %v under a %d MB/s limit: want at least %v", data>>20, took, limitMiB, want)
	}
	want := reps[0].readAll(size)
	if !bytes.Equal(fresh.readAll(size), want) {
		t.Fatal("the rebuilt replica differs from the source")
	}
	if !strings.Contains(e.ctl("ls-replica"), fresh.addr) {
		t.Fatal("rebuilt replica not listed")
	}
}
