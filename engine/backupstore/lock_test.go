package backupstore

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBlockersTable(t *testing.T) {
	now := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)
	me := serverLock{lockFile{Name: "lock-b", Type: 1, Operation: opBackup}, now}
	at := func(name string, typ int, op string, acquired bool, age time.Duration) serverLock {
		return serverLock{lockFile{Name: name, Type: typ, Operation: op, Acquired: acquired}, now.Add(-age)}
	}
	for _, tc := range []struct {
		name     string
		other    serverLock
		typ, opc int
	}{
		{"older deletion lock blocks", at("lock-x", 2, "", false, time.Second), 1, 0},
		{"acquired deletion lock blocks though newer", at("lock-x", 2, "", true, -time.Second), 1, 0},
		{"newer unacquired deletion lock waits for me", at("lock-x", 2, "", false, -time.Second), 0, 0},
		{"expired deletion lock is ignored", at("lock-x", 2, "", true, 151*time.Second), 0, 0},
		{"restore (same type) does not block a backup", at("lock-x", 1, opRestore, true, time.Second), 0, 0},
		{"Longhorn's type-1 lock does not block", at("lock-x", 1, "", true, time.Second), 0, 0},
		{"an earlier backup blocks a backup", at("lock-x", 1, opBackup, false, time.Second), 0, 1},
		{"same time: name decides", at("lock-a", 1, opBackup, false, 0), 0, 1},
		{"same time, later name", at("lock-c", 1, opBackup, false, 0), 0, 0},
		{"my own file", at("lock-b", 2, "", true, time.Second), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, op := blockers(me, []serverLock{tc.other}, now, LockDuration)
			if len(typ) != tc.typ || len(op) != tc.opc {
				t.Fatalf("type blockers %d, backup blockers %d; want %d, %d", len(typ), len(op), tc.typ, tc.opc)
			}
		})
	}
}

// A deletion lock written by Longhorn (its JSON, no Operation) keeps a backup
// out until it goes; past LockMaxWait the backup fails with ErrLocked.
func TestLonghornDeletionLockBlocksBackup(t *testing.T) {
	s := newDirStore(t)
	root := strings.TrimPrefix(s.URL(), "vfs://")
	lock := filepath.Join(root, LocksPath("vol-1"), "lock-0123456789abcdef.lck")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, []byte(`{"Name":"lock-0123456789abcdef","Type":2,"Acquired":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := newMemSource(4 * mib)
	src.snapshot("s1")
	job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: "s1", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	_, err = job.Run(context.Background(), nil)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "lock-0123456789abcdef") {
		t.Fatalf("backup under a deletion lock: %v, want ErrLocked naming the lock", err)
	}
	go func() { time.Sleep(100 * time.Millisecond); _ = os.Remove(lock) }()
	job, err = s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: "s1", Source: src})
	if err != nil {
		t.Fatalf("backup after the lock went: %v", err)
	}
	if _, err := job.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// Two backups of one volume at once run one after the other: both succeed,
// the second is incremental on the first, and volume.cfg counts each block
// once. Overlap is read from the store itself: a poller checks that no two
// backup lock files of the volume are Acquired at once while both run (the
// lock is acquired inside Run, while the early blocks upload). The store
// waits LockCheckWait after writing its lock file, as in production (2 s
// there): with no wait, two lock files written within one mtime tick can
// both see themselves first (Longhorn's rule has the same window).
func TestConcurrentBackupsSerialize(t *testing.T) {
	opts := fastOpts()
	opts.LockCheckWait = 50 * time.Millisecond
	s, err := Open(context.Background(), "vfs://"+t.TempDir(), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(8)), src, DefaultBlockSize, []int64{0, 1})
	src.snapshot("s1")
	randomBlocks(rand.New(rand.NewSource(9)), src, DefaultBlockSize, []int64{2})
	src.snapshot("s2")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []*Backup
	)
	acquiredBackupLocks := func() int {
		locks, _ := s.listLocks(context.Background(), "vol-1")
		n := 0
		for _, l := range locks {
			if l.Acquired && l.Operation == opBackup {
				n++
			}
		}
		return n
	}
	stop, polled := make(chan struct{}), make(chan int)
	go func() {
		most := 0
		for {
			select {
			case <-stop:
				polled <- most
				return
			default:
			}
			most = max(most, acquiredBackupLocks())
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for _, snap := range []string{"s1", "s2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: snap, Source: src})
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond) // a backup holding its lock, seen by the poller
			b, err := job.Run(context.Background(), func(int) { time.Sleep(5 * time.Millisecond) })
			mu.Lock()
			results = append(results, b)
			mu.Unlock()
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	if most := <-polled; most != 1 {
		t.Errorf("at most %d backup locks acquired at once, want 1", most)
	}
	if t.Failed() {
		t.FailNow()
	}
	vol, err := s.LoadVolume(context.Background(), "vol-1")
	for _, r := range results {
		t.Logf("backup %s of %s: incremental %v, newly %d, blocks %v", r.Name, r.SnapshotName, r.IsIncremental, r.NewlyUploadedDataSize, r.Blocks)
	}
	if err != nil || vol.BlockCount != 3 || vol.LastBackupName != results[1].Name {
		t.Fatalf("volume.cfg %+v %v; want BlockCount 3, last backup %s", vol, err, results[1].Name)
	}
	if blocks, _ := s.ListBlocks(context.Background(), "vol-1"); len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3", len(blocks))
	}
	if !results[1].IsIncremental {
		t.Fatalf("the second backup (%s of %s) is not incremental on the first", results[1].Name, results[1].SnapshotName)
	}
}

// A held lock's file is refreshed while the operation runs.
func TestLockRefresh(t *testing.T) {
	s := newDirStore(t)
	l := s.newLock("vol-1", LockTypeBackup, opBackup)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(s.URL(), "vfs://")
	p := filepath.Join(root, lockPath("vol-1", l.file.Name))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fi, err := os.Stat(p)
	if err != nil || time.Since(fi.ModTime()) > time.Minute {
		t.Fatalf("lock file not refreshed: %v %v", fi.ModTime(), err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("lock file left after Release: %v", err)
	}
}

// timedDest records when its first block was written.
type timedDest struct {
	memDest
	once  sync.Once
	first time.Time
}

func (d *timedDest) WriteAt(p []byte, off int64) (int, error) {
	d.once.Do(func() { d.first = time.Now() })
	return d.memDest.WriteAt(p, off)
}

// A restore moves blocks while its lock's check wait runs, and succeeds only
// once the lock is held and the backup read again is unchanged; a deletion
// lock that outlasts LockMaxWait fails Run with ErrLocked, and a backup
// removed while the restore waited fails it with ErrNotFound (the blocks
// already written do not count).
func TestRestoreOverlapsLockWait(t *testing.T) {
	opts := fastOpts()
	opts.LockCheckWait = 300 * time.Millisecond
	dir := t.TempDir()
	s, err := Open(context.Background(), "vfs://"+dir, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(3)), src, DefaultBlockSize, []int64{0, 1, 3})
	src.snapshot("s1")
	b := backupOf(t, s, src, "s1", nil)
	restore := func() (*timedDest, time.Duration, error) {
		start := time.Now()
		job, err := s.PrepareRestore(context.Background(), RestoreRequest{VolumeName: "vol-1", BackupName: b.Name})
		if err != nil {
			return nil, 0, err
		}
		d := &timedDest{memDest: memDest{buf: make([]byte, job.VolumeSize())}}
		err = job.Run(context.Background(), d, nil)
		return d, time.Since(start), err
	}
	d, took, err := restore()
	if err != nil {
		t.Fatal(err)
	}
	if sha(d.buf) != sha(src.snaps["s1"]) {
		t.Fatal("restored bytes differ")
	}
	if took < opts.LockCheckWait || d.first.IsZero() || time.Since(d.first) < took-opts.LockCheckWait+50*time.Millisecond {
		t.Fatalf("restore took %v, first block written %v before its end; want the blocks moving within the %v lock check wait",
			took, time.Since(d.first), opts.LockCheckWait)
	}

	lock := filepath.Join(dir, LocksPath("vol-1"), "lock-00000000000000dd.lck")
	if err := os.WriteFile(lock, []byte(`{"Name":"lock-00000000000000dd","Type":2,"Acquired":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := restore(); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "lock-00000000000000dd") {
		t.Fatalf("restore under a deletion lock: %v, want ErrLocked naming it", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = os.Remove(filepath.Join(dir, BackupConfigPath("vol-1", b.Name)))
		_ = os.Remove(lock)
	}()
	if _, _, err := restore(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("restore of a backup deleted while it waited for its lock: %v, want ErrNotFound", err)
	}
	if locks, _ := s.listLocks(context.Background(), "vol-1"); len(locks) != 0 {
		t.Fatalf("locks left: %+v", locks)
	}
}

// A backup that finds blocks in the store before its lock is held while a
// deletion holds the volume's lock, which then removes them (a deletion's
// garbage collection), uploads them again once it holds the lock: the
// backup restores to the snapshot's bytes.
func TestBackupReuploadsBlocksADeletionRemoved(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), "vfs://"+dir, nil, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(5)), src, DefaultBlockSize, []int64{0, 1})
	src.snapshot("s1")
	b1 := backupOf(t, s, src, "s1", nil)
	randomBlocks(rand.New(rand.NewSource(6)), src, DefaultBlockSize, []int64{3})
	src.snapshot("s2")
	src.remove("s1") // the next backup is a full one: blocks 0 and 1 are in the store already
	lock := filepath.Join(dir, LocksPath("vol-1"), "lock-00000000000000ee.lck")
	if err := os.WriteFile(lock, []byte(`{"Name":"lock-00000000000000ee","Type":2,"Acquired":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: "s2", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(150 * time.Millisecond)
		_ = os.Remove(filepath.Join(dir, BackupConfigPath("vol-1", b1.Name)))
		_ = os.RemoveAll(filepath.Join(dir, BlocksPath("vol-1")))
		_ = os.Remove(lock)
	}()
	b2, err := job.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b2.IsIncremental || len(b2.Blocks) != 3 {
		t.Fatalf("backup of s2: incremental %v, %d blocks; want full, 3", b2.IsIncremental, len(b2.Blocks))
	}
	if blocks, _ := s.ListBlocks(context.Background(), "vol-1"); len(blocks) != 3 {
		t.Fatalf("%d blocks in the store, want 3", len(blocks))
	}
	dst := &memDest{}
	if err := restoreInto(t, s, dst, b2.Name, ""); err != nil {
		t.Fatal(err)
	}
	if sha(dst.buf) != sha(src.snaps["s2"]) {
		t.Fatal("restored bytes differ from s2")
	}
}
