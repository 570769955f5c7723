package enginetest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/frontend/nbd"
)

// TestLonghornEngineMixedSet: a Longhorn-shaped engine (lhengine_test.go,
// with our NBD frontend in front so fio can drive it) on two replicas of
// ours and a Longhorn-shaped one: start (our replicas must report closed,
// take two data connections and open), fio verify with FLUSH while
// qemu-io sends FUA and 512-byte-aligned writes (Longhorn's controller
// forwards them unaligned, so our replicas read-modify-write), a
// snapshot, a rebuild driven the way Longhorn's CLI does into a replica of
// ours (pulled from ours and the Longhorn one) and into a Longhorn one
// (pulled from ours), an expansion and a purge; all replicas end equal.
func TestLonghornEngineMixedSet(t *testing.T) {
	testutilTools(t, "fio", "qemu-io")
	const size, grown = 48 << 20, 64 << 20
	dir := t.TempDir()
	o1 := startReplica(t, filepath.Join(dir, "o1"), size)
	o2 := startReplica(t, filepath.Join(dir, "o2"), size)
	lh := startLHReplica(t, filepath.Join(dir, "lh"), size)
	e := startLHEngine(t, size, o1.addr, o2.addr, lh.addr)
	sock := filepath.Join(t.TempDir(), "nbd.sock")
	fe, err := nbd.New(nbd.Config{Listen: "unix:" + sock})
	if err != nil {
		t.Fatal(err)
	}
	if err := fe.Startup(context.Background(), "vol", size, e); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fe.Shutdown() })
	uri := "nbd+unix:///vol?socket=" + sock
	qio := func(cmds ...string) {
		t.Helper()
		args := []string{"-f", "raw"}
		for _, c := range cmds {
			args = append(args, "-c", c)
		}
		if out := run(t, time.Minute, "qemu-io", append(args, uri)...); strings.Contains(out, "failed") {
			t.Fatalf("qemu-io %v:\n%s", cmds, out)
		}
	}
	fio := startFio(t, fioJob(t, uri, 24<<20, "fsync=16"))
	qio("write -f -P 0x5a 41M 1M", "write -P 0x5b 41M 1536", "write -P 0x5c 42994176 512",
		"read -P 0x5b 41M 1536", "read -P 0x5a 42993152 1024", "read -P 0x5c 42994176 512")
	e.snapshot("lh1", true)
	e.remove(o2.addr)
	o3 := startReplica(t, filepath.Join(dir, "o3"), size)
	sent := lh.count("FileSend")
	e.addReplica(o3.addr)
	if lh.count("FileSend") == sent {
		t.Error("the Longhorn replica sent nothing to ours (FilesSync used only our source)")
	}
	e.remove(lh.addr)
	lh2 := startLHReplica(t, filepath.Join(dir, "lh2"), size)
	e.addReplica(lh2.addr)
	if msg := fio.wait(); msg != "" {
		t.Fatal(msg)
	}
	e.expand(grown)
	if err := fe.Expand(grown); err != nil {
		t.Fatal(err)
	}
	qio("write -f -P 0x5d 60M 1M", "read -P 0x5d 60M 1M", "read -P 0x5a 42995712 4096")
	e.purge("lh1")
	if out, err := runErr(5*time.Minute, "fio", fioJob(t, uri, 24<<20, "verify_only=1")); err != nil {
		t.Fatalf("fio verify: %v\n%s", err, out)
	}
	want := o1.readAll(grown)
	if !bytes.Equal(o3.readAll(grown), want) || !bytes.Equal(lh2.readAll(grown), want) {
		t.Fatal("the replicas differ at the end")
	}
	for _, r := range []*lhReplica{lh, lh2} {
		if d := r.data.droppedTypes(); len(d) > 0 {
			t.Errorf("%s dropped messages %v", r.addr, d)
		}
	}
}
