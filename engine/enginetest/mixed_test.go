package enginetest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMixedReplicaSet is issue 21's "done when": a volume served by our
// engine with one Longhorn-shaped replica (lhfake_*_test.go) and two of
// ours survives fio verify through FLUSH (fio fsync) and FUA writes
// (qemu-io write -f), a snapshot, a rebuild in each direction (a replica of
// ours rebuilt from the Longhorn one, then a Longhorn one rebuilt from
// ours), an expansion and a purge; every replica ends with the same bytes,
// and the Longhorn replicas never received a message they do not know
// (Flush, shared memory), which they would have left unanswered.
func TestMixedReplicaSet(t *testing.T) {
	testutilTools(t, "fio", "qemu-io")
	const size, grown = 64 << 20, 96 << 20
	dir := t.TempDir()
	lh := startLHReplica(t, filepath.Join(dir, "lh"), size)
	o1 := startReplica(t, filepath.Join(dir, "o1"), size)
	o2 := startReplica(t, filepath.Join(dir, "o2"), size)
	// The Longhorn replica first: a rebuild copies from the first RW replica.
	e := startEngineAt(t, "vol", size, []string{lh.addr, o1.addr, o2.addr})
	expectModes(t, e, lh.addr, o1.addr, o2.addr)
	qio := func(cmds ...string) {
		t.Helper()
		args := []string{"-f", "raw"}
		for _, c := range cmds {
			args = append(args, "-c", c)
		}
		if out := run(t, time.Minute, "qemu-io", append(args, e.uri())...); strings.Contains(out, "failed") {
			t.Fatalf("qemu-io %v:\n%s", cmds, out)
		}
	}
	fio := startFio(t, fioJob(t, e.uri(), 32<<20, "fsync=16"))
	qio("write -f -P 0xfa 48M 1M", "read -P 0xfa 48M 1M") // FUA
	if name := strings.TrimSpace(e.ctl("snapshot", "create", "mixed1")); name != "mixed1" {
		t.Fatalf("snapshot create: %q", name)
	}
	// Rebuild Longhorn -> ours, while fio writes.
	sent := lh.count("FileSend")
	e.ctl("rm-replica", o2.addr)
	o3 := startReplica(t, filepath.Join(dir, "o3"), size)
	e.ctl("add-replica", "--wait", o3.addr)
	if lh.count("FileSend") <= sent {
		t.Fatal("the Longhorn replica sent no file for the rebuild of ours")
	}
	// Rebuild ours -> Longhorn.
	e.ctl("rm-replica", lh.addr)
	lh2 := startLHReplica(t, filepath.Join(dir, "lh2"), size)
	e.ctl("add-replica", "--wait", lh2.addr)
	if lh2.count("FilesSync") != 1 || lh2.count("ReplicaReload") == 0 {
		t.Fatalf("the Longhorn target's agent was not driven as Longhorn's CLI does: %v", lh2.calls)
	}
	expectModes(t, e, o1.addr, o3.addr, lh2.addr)
	if msg := fio.wait(); msg != "" {
		t.Fatal(msg)
	}
	qio("write -f -P 0xfb 40M 64k", "read -P 0xfa 48M 1M", "read -P 0xfb 40M 64k")
	// Expansion while attached.
	e.ctl("expand", "--size", fmt.Sprint(grown), "--wait")
	qio("write -f -P 0xfc 80M 1M", "read -P 0xfc 80M 1M", "read -P 0xfa 48M 1M")
	// Purge the user snapshot and the rebuilds' system snapshots.
	e.ctl("snapshot", "rm", "mixed1")
	e.ctl("snapshot", "purge", "--wait")
	if out, err := runErr(5*time.Minute, "fio", fioJob(t, e.uri(), 32<<20, "verify_only=1")); err != nil {
		t.Fatalf("fio verify: %v\n%s", err, out)
	}
	expectModes(t, e, o1.addr, o3.addr, lh2.addr)
	want := o1.readAll(grown)
	if !bytes.Equal(o3.readAll(grown), want) || !bytes.Equal(lh2.readAll(grown), want) {
		t.Fatal("the replicas differ at the end")
	}
	for _, r := range []*lhReplica{lh, lh2} {
		for typ, n := range r.data.droppedTypes() {
			t.Errorf("Longhorn replica %s dropped %d messages of type %d (no Longhorn peer answers them)", r.addr, n, typ)
		}
	}
}

func expectModes(t *testing.T, e *engineProc, addrs ...string) {
	t.Helper()
	m := e.modes()
	for _, a := range addrs {
		if m[a] != "RW" {
			t.Fatalf("replica %s is %q, want RW (modes %v)\n%s", a, m[a], m, e.logText())
		}
	}
	if len(m) != len(addrs) {
		t.Fatalf("modes %v, want exactly %v", m, addrs)
	}
}

type fioRun struct{ done chan string }

func startFio(t *testing.T, job string) *fioRun {
	f := &fioRun{done: make(chan string, 1)}
	go func() {
		out, err := runErr(5*time.Minute, "fio", job)
		if err != nil {
			f.done <- fmt.Sprintf("fio failed: %v\n%s", err, out)
			return
		}
		f.done <- ""
	}()
	t.Cleanup(func() { f.wait() })
	return f
}

func (f *fioRun) wait() string {
	msg, ok := <-f.done
	if ok {
		close(f.done)
	}
	return msg
}
