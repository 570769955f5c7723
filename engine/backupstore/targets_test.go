package backupstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/willscott/go-nfs-client/nfs"

	"github.com/longhorn-go/longhorn/testbed/backuptarget"
)

// target is one backup target under test.
type target struct {
	name string
	url  string
	cred Credential
	stop func()              // make the target unreachable
	file func(string) string // local file of a store path, for corruption
}

func s3Target(t *testing.T) target {
	srv := backuptarget.StartS3(t, "cluster-1")
	return target{name: "s3", url: srv.URL, cred: srv.Credential, stop: srv.Stop,
		file: func(p string) string { return srv.ObjectPath("cluster-1/" + p) }}
}

func nfsTestTarget(t *testing.T) target {
	t.Setenv(nfsClientEnv, "userspace")
	srv := backuptarget.StartNFS(t)
	return target{name: "nfs", url: srv.URL, stop: srv.Stop, file: func(p string) string { return srv.Export + "/" + p }}
}

func openTarget(t *testing.T, tg target) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, tg.url, tg.cred, fastOpts())
	if err != nil {
		t.Fatalf("open %s: %v", tg.url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The driver contract, the same on every target.
func testDriver(t *testing.T, d Driver) {
	ctx := context.Background()
	data := []byte("hello backupstore")
	if err := d.Write(ctx, "backupstore/a/b/c.cfg", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(ctx, "backupstore/a/b/c.cfg", bytes.NewReader(data[:5]), 5); err != nil { // overwrite
		t.Fatal(err)
	}
	fi, err := d.Stat(ctx, "backupstore/a/b/c.cfg")
	if err != nil || fi.Size != 5 || time.Since(fi.ModTime) > time.Hour || time.Until(fi.ModTime) > time.Hour {
		t.Fatalf("stat: %+v %v", fi, err)
	}
	rc, err := d.Read(ctx, "backupstore/a/b/c.cfg")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "hello" {
		t.Fatalf("read %q", got)
	}
	if _, err := d.Stat(ctx, "backupstore/a/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stat of a missing file: %v", err)
	}
	if _, err := d.Read(ctx, "backupstore/a/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read of a missing file: %v", err)
	}
	if err := d.Write(ctx, "backupstore/a/d.blk", bytes.NewReader(nil), 0); err != nil {
		t.Fatal(err)
	}
	names, err := d.List(ctx, "backupstore/a")
	sort.Strings(names)
	if err != nil || strings.Join(names, ",") != "b,d.blk" {
		t.Fatalf("list: %v %v", names, err)
	}
	if names, err := d.List(ctx, "backupstore/nothing"); err != nil || len(names) != 0 {
		t.Fatalf("list of a missing dir: %v %v", names, err)
	}
	if err := d.Remove(ctx, "backupstore/a"); err != nil {
		t.Fatal(err)
	}
	if names, _ := d.List(ctx, "backupstore/a"); len(names) != 0 {
		t.Fatalf("left after remove: %v", names)
	}
	if err := d.Remove(ctx, "backupstore/a"); err != nil {
		t.Fatalf("removing a missing path: %v", err)
	}
}

// Backup a volume to the target, back up 10 % again, restore both, delete
// both and leave no block behind.
func testBackupCycle(t *testing.T, s *Store, tg target) {
	ctx := context.Background()
	r := rand.New(rand.NewSource(20))
	src := newMemSource(20 * mib)
	randomBlocks(r, src, DefaultBlockSize, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	src.snapshot("snap-1")
	b1 := backupOf(t, s, src, "snap-1", nil)
	randomBlocks(r, src, DefaultBlockSize, []int64{6})
	src.snapshot("snap-2")
	b2 := backupOf(t, s, src, "snap-2", nil)
	if !b2.IsIncremental || b2.NewlyUploadedDataSize > DefaultBlockSize+4096 || b2.NewlyUploadedDataSize < DefaultBlockSize {
		t.Fatalf("%s: second backup incremental %v, new data %d; want one block", tg.name, b2.IsIncremental, b2.NewlyUploadedDataSize)
	}
	dst := &memDest{}
	if err := restoreInto(t, s, dst, b1.Name, ""); err != nil || !bytes.Equal(dst.buf, src.snaps["snap-1"]) {
		t.Fatalf("%s: restore 1: %v", tg.name, err)
	}
	if err := restoreInto(t, s, dst, b2.Name, b1.Name); err != nil || !bytes.Equal(dst.buf, src.snaps["snap-2"]) {
		t.Fatalf("%s: incremental restore 2: %v", tg.name, err)
	}
	// a corrupted block is named by the restore
	victim := b2.Blocks[6].BlockChecksum
	if err := os.WriteFile(tg.file(BlockPath("vol-1", victim)), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restoreInto(t, s, &memDest{}, b2.Name, ""); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("%s: restore over a corrupted block: %v", tg.name, err)
	}
	for _, b := range []*Backup{b1, b2} {
		if _, err := s.DeleteBackup(ctx, "vol-1", b.Name); err != nil {
			t.Fatal(err)
		}
	}
	if blocks, err := s.ListBlocks(ctx, "vol-1"); err != nil || len(blocks) != 0 {
		t.Fatalf("%s: blocks left after deleting every backup: %d %v", tg.name, len(blocks), err)
	}
}

// An unreachable target fails fast with ErrUnavailable, never hangs.
func testUnreachable(t *testing.T, tg target) {
	tg.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Open(ctx, tg.url, tg.cred, fastOpts())
	if err == nil || time.Since(start) > 45*time.Second {
		t.Fatalf("%s: open of a stopped target: %v after %v", tg.name, err, time.Since(start))
	}
}

func TestS3Target(t *testing.T) {
	tg := s3Target(t)
	s := openTarget(t, tg)
	t.Run("driver", func(t *testing.T) { testDriver(t, s.Driver()) })
	t.Run("backup", func(t *testing.T) { testBackupCycle(t, s, tg) })
	t.Run("wrong credentials", func(t *testing.T) {
		bad := Credential{}
		for k, v := range tg.cred {
			bad[k] = v
		}
		bad[AWSSecretKey] = "wrong"
		_, err := Open(context.Background(), tg.url, bad, fastOpts())
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Signature") {
			t.Fatalf("wrong secret: %v; want ErrUnavailable with the server's message", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) { testUnreachable(t, tg) })
}

func TestNFSTarget(t *testing.T) {
	tg := nfsTestTarget(t)
	s := openTarget(t, tg)
	t.Run("driver", func(t *testing.T) { testDriver(t, s.Driver()) })
	t.Run("backup", func(t *testing.T) { testBackupCycle(t, s, tg) })
	t.Run("unreachable", func(t *testing.T) { testUnreachable(t, tg) })
}

func TestVFSTarget(t *testing.T) {
	dir := t.TempDir()
	tg := target{name: "vfs", url: "vfs://" + dir, stop: func() {}, file: func(p string) string { return dir + "/" + p }}
	s := openTarget(t, tg)
	t.Run("driver", func(t *testing.T) { testDriver(t, s.Driver()) })
	t.Run("backup", func(t *testing.T) { testBackupCycle(t, s, tg) })
}

func TestOpenDriverBadURL(t *testing.T) {
	for _, u := range []string{"ftp://x/y", "s3://", "s3://bucket", "nfs://srv", "nfs://srv:2049/exp", "vfs://relative", "cifs://srv/share", "%zz"} {
		if _, err := OpenDriver(context.Background(), u, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "URL") {
			t.Errorf("%q: %v; want ErrInvalid naming the URL", u, err)
		}
	}
}

// A file handle gone stale between the lookup and the call (a lock file of a
// writer that just finished) is looked up again, and counts as not found
// when it stays stale.
func TestNFSStaleHandle(t *testing.T) {
	stale := &nfs.Error{ErrorNum: nfs.NFS3ErrStale, ErrorString: "NFS3ERR_STALE"}
	calls := 0
	_, err := retryStale(func() (int, error) { calls++; return 0, stale })()
	if calls != 1+staleRetries || !isStale(err) {
		t.Fatalf("always stale: %d calls, %v", calls, err)
	}
	calls = 0
	v, err := retryStale(func() (int, error) {
		calls++
		if calls < 2 {
			return 0, stale
		}
		return 7, nil
	})()
	if v != 7 || err != nil || calls != 2 {
		t.Fatalf("stale once: %d %v after %d calls", v, err, calls)
	}
	d := &userNFS{t: nfsTarget{url: "nfs://h:/x"}}
	if err := d.mapErr("locks/lock-1.lck", fmt.Errorf("open: %w", stale)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("mapErr(stale) = %v, want ErrNotFound", err)
	}
}
