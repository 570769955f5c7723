package backupstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"
)

// memSource is an in-memory volume with snapshots: each snapshot is a full
// copy plus the set of blocks written since the previous snapshot.
type memSource struct {
	mu      sync.Mutex
	size    int64
	cur     []byte
	dirty   map[int64]bool // blocks (by 4 KiB sector offset) written since the last snapshot
	snaps   map[string][]byte
	changed map[string]map[int64]bool // snapshot -> sectors written in it
	order   []string
	readErr error
}

func newMemSource(size int64) *memSource {
	return &memSource{size: size, cur: make([]byte, size), dirty: map[int64]bool{},
		snaps: map[string][]byte{}, changed: map[string]map[int64]bool{}}
}

func (m *memSource) write(off int64, p []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(m.cur[off:], p)
	for s := off / 4096 * 4096; s < off+int64(len(p)); s += 4096 {
		m.dirty[s] = true
	}
}

func (m *memSource) snapshot(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snaps[name] = bytes.Clone(m.cur)
	m.changed[name] = m.dirty
	m.dirty = map[int64]bool{}
	m.order = append(m.order, name)
}

func (m *memSource) remove(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.snaps, name)
}

func (m *memSource) HasSnapshot(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.snaps[name]
	return ok
}

func (m *memSource) ChangedBlocks(snap, base string, bs int64) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.snaps[snap]; !ok {
		return nil, fmt.Errorf("no snapshot %s", snap)
	}
	blocks := map[int64]bool{}
	started := base == ""
	for _, n := range m.order {
		if !started {
			if n == base {
				started = true
			}
			continue
		}
		for s := range m.changed[n] {
			blocks[s/bs*bs] = true
		}
		if n == snap {
			break
		}
	}
	out := make([]int64, 0, len(blocks))
	for b := range blocks {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (m *memSource) ReadSnapshot(snap string, p []byte, off int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readErr != nil {
		return m.readErr
	}
	s, ok := m.snaps[snap]
	if !ok {
		return fmt.Errorf("no snapshot %s", snap)
	}
	copy(p, s[off:off+int64(len(p))])
	return nil
}

// memDest is a restore destination.
type memDest struct {
	mu  sync.Mutex
	buf []byte
}

func (d *memDest) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return copy(d.buf[off:], p), nil
}

func (d *memDest) ZeroRange(off, n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.buf[off : off+n])
	return nil
}

func fastOpts() Options {
	return Options{LockCheckWait: -1, LockCheckInterval: 20 * time.Millisecond, LockMaxWait: 500 * time.Millisecond,
		LockRefreshInterval: 50 * time.Millisecond}
}

func newDirStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), "vfs://"+t.TempDir(), nil, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomBlocks(r *rand.Rand, m *memSource, bs int64, blocks []int64) {
	for _, b := range blocks {
		p := make([]byte, bs)
		r.Read(p)
		m.write(b*bs, p)
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func backupOf(t *testing.T, s *Store, src *memSource, snap string, params map[string]string) *Backup {
	t.Helper()
	job, err := s.PrepareBackup(context.Background(), BackupRequest{
		VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: snap,
		SnapshotCreatedAt: time.Now().UTC().Format(time.RFC3339), Parameters: params, Source: src,
		Labels: map[string]string{"k": "v"},
	})
	if err != nil {
		t.Fatalf("prepare backup of %s: %v", snap, err)
	}
	b, err := job.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("backup of %s: %v", snap, err)
	}
	return b
}

func restoreInto(t *testing.T, s *Store, dst *memDest, backup, last string) error {
	t.Helper()
	job, err := s.PrepareRestore(context.Background(), RestoreRequest{VolumeName: "vol-1", BackupName: backup, LastBackupName: last})
	if err != nil {
		return err
	}
	if dst.buf == nil {
		dst.buf = make([]byte, job.VolumeSize())
	}
	return job.Run(context.Background(), dst, nil)
}
