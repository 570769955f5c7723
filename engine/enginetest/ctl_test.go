package enginetest

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCtlSnapshotRevertExpand drives a running engine with `longhorn engine
// ctl` only: snapshots, revert with the frontend down, remove + purge, and an
// expansion while attached that NBD clients see.
func TestCtlSnapshotRevertExpand(t *testing.T) {
	testutilTools(t, "qemu-io", "nbdinfo")
	const size = 16 << 20
	dir := t.TempDir()
	reps := []*replicaProc{startReplica(t, filepath.Join(dir, "a"), size), startReplica(t, filepath.Join(dir, "b"), size)}
	e := startEngine(t, "vol", size, reps)
	qio := func(cmds ...string) string {
		args := []string{"-f", "raw"}
		for _, c := range cmds {
			args = append(args, "-c", c)
		}
		out := run(t, time.Minute, "qemu-io", append(args, e.uri())...)
		if strings.Contains(out, "verification failed") {
			t.Fatalf("qemu-io %v:\n%s", cmds, out)
		}
		return out
	}
	qio("write -P 0x11 0 1M")
	if name := strings.TrimSpace(e.ctl("snapshot", "create", "--label", "app=db", "first")); name != "first" {
		t.Fatalf("snapshot create printed %q", name)
	}
	qio("write -P 0x22 0 1M")
	second := strings.TrimSpace(e.ctl("snapshot", "create"))
	qio("write -P 0x33 0 1M")
	var ls []string
	if err := json.Unmarshal([]byte(e.ctl("--json", "snapshot", "ls")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0] != second || ls[1] != "first" {
		t.Fatalf("snapshot ls %v, want [%s first]", ls, second)
	}
	info := e.ctl("snapshot", "info")
	if !strings.Contains(info, "map[app:db]") {
		t.Fatalf("snapshot info misses the label:\n%s", info)
	}
	// Revert needs the frontend down.
	if out, err := runErr(time.Minute, testutilBinary(t), "engine", "ctl", "--url", e.url, "snapshot", "revert", "first"); err == nil {
		t.Fatalf("revert with the frontend up succeeded: %s", out)
	}
	e.ctl("frontend", "shutdown")
	e.ctl("snapshot", "revert", "first")
	if ep := strings.TrimSpace(e.ctl("frontend", "start", "nbd")); !strings.HasPrefix(ep, "nbd+unix://") {
		t.Fatalf("frontend start printed %q", ep)
	}
	qio("read -P 0x11 0 1M")
	// Remove the other snapshot and purge.
	e.ctl("snapshot", "rm", second)
	// Longhorn's `snapshot ls` hides a snapshot marked removed; `info`
	// still shows it, removed.
	if out := e.ctl("snapshot", "ls"); strings.Contains(out, second) || !strings.Contains(out, "first") {
		t.Fatalf("snapshot ls after rm:\n%s", out)
	}
	if info := e.ctl("snapshot", "info"); !strings.Contains(info, second) || !strings.Contains(info, "true") {
		t.Fatalf("snapshot info after rm:\n%s", info)
	}
	e.ctl("snapshot", "purge", "--wait")
	if out := e.ctl("snapshot", "ls"); strings.Contains(out, second) {
		t.Fatalf("removed snapshot still listed:\n%s", out)
	}
	qio("read -P 0x11 0 1M")
	// Expand while attached; a new NBD connection sees the new size.
	e.ctl("expand", "--size", strconv.Itoa(2*size), "--wait")
	if got := strings.TrimSpace(run(t, time.Minute, "nbdinfo", "--size", e.uri())); got != strconv.Itoa(2*size) {
		t.Fatalf("size after expand %s, want %d", got, 2*size)
	}
	qio("write -P 0x44 "+strconv.Itoa(2*size-4096)+" 4096", "read -P 0x44 "+strconv.Itoa(2*size-4096)+" 4096", "read -P 0x11 0 1M")
	var vol struct {
		Size         string `json:"size"`
		ReplicaCount int    `json:"replicaCount"`
	}
	if err := json.Unmarshal([]byte(e.ctl("--json", "info")), &vol); err != nil {
		t.Fatal(err)
	}
	if vol.Size != strconv.Itoa(2*size) || vol.ReplicaCount != 2 {
		t.Fatalf("info %+v", vol)
	}
}

// TestHungReplicaTimesOut: a replica that stops answering (SIGSTOP) is failed
// after --engine-replica-timeout and I/O goes on with the others.
func TestHungReplicaTimesOut(t *testing.T) {
	testutilTools(t, "qemu-io")
	const size = 16 << 20
	dir := t.TempDir()
	reps := []*replicaProc{startReplica(t, filepath.Join(dir, "a"), size), startReplica(t, filepath.Join(dir, "b"), size)}
	e := startEngine(t, "vol", size, reps, "--engine-replica-timeout", "2")
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x61 0 1M", e.uri())
	if err := reps[1].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer reps[1].cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck
	start := time.Now()
	out := run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x62 1M 1M", "-c", "read -P 0x62 1M 1M", "-c", "read -P 0x61 0 1M", e.uri())
	if strings.Contains(out, "verification failed") {
		t.Fatalf("qemu-io:\n%s", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("I/O stalled %v with a 2 s replica timeout", d)
	}
	if m := e.modes(); m[reps[1].addr] != "ERR" || m[reps[0].addr] != "RW" {
		t.Fatalf("modes %v, want the stopped replica ERR", m)
	}
}
