package nbd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// memBackend is an in-memory frontend.Backend for unit and fuzz tests.
type memBackend struct {
	mu      sync.RWMutex
	data    []byte
	flushes atomic.Int64
	unmaps  atomic.Int64
	delay   time.Duration // added to every call, to keep requests in flight
}

func newMemBackend(size int) *memBackend { return &memBackend{data: make([]byte, size)} }

func (m *memBackend) check(n int, off int64) error {
	if off < 0 || off+int64(n) > int64(len(m.data)) {
		return fmt.Errorf("%w: %d+%d > %d", frontend.ErrOutOfRange, off, n, len(m.data))
	}
	return nil
}

func (m *memBackend) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(m.delay)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(len(p), off); err != nil {
		return 0, err
	}
	return copy(p, m.data[off:]), nil
}

func (m *memBackend) WriteAt(p []byte, off int64) (int, error) {
	time.Sleep(m.delay)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(len(p), off); err != nil {
		return 0, err
	}
	return copy(m.data[off:], p), nil
}

func (m *memBackend) UnmapAt(length uint32, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(int(length), off); err != nil {
		return 0, err
	}
	clear(m.data[off : off+int64(length)])
	m.unmaps.Add(1)
	return int(length), nil
}

func (m *memBackend) Flush() error {
	time.Sleep(m.delay)
	m.flushes.Add(1)
	return nil
}

func (m *memBackend) Size() int64 { return int64(len(m.data)) }

func (m *memBackend) snapshot() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]byte(nil), m.data...)
}

// fileBackend serves a volume from a plain file with pread/pwrite, punches
// holes for unmap and fdatasyncs on flush: what a one-replica engine does,
// without the engine.
type fileBackend struct {
	f       *os.File
	size    int64
	flushes atomic.Int64
}

func newFileBackend(t testing.TB, size int64) *fileBackend {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "volume.img"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &fileBackend{f: f, size: size}
}

func (b *fileBackend) check(n int, off int64) error {
	if off < 0 || off+int64(n) > b.size {
		return fmt.Errorf("%w: %d+%d > %d", frontend.ErrOutOfRange, off, n, b.size)
	}
	return nil
}

func (b *fileBackend) ReadAt(p []byte, off int64) (int, error) {
	if err := b.check(len(p), off); err != nil {
		return 0, err
	}
	return b.f.ReadAt(p, off)
}

func (b *fileBackend) WriteAt(p []byte, off int64) (int, error) {
	if err := b.check(len(p), off); err != nil {
		return 0, err
	}
	return b.f.WriteAt(p, off)
}

func (b *fileBackend) UnmapAt(length uint32, off int64) (int, error) {
	if err := b.check(int(length), off); err != nil {
		return 0, err
	}
	const punchHole = 0x02 | 0x01 // FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
	if err := syscall.Fallocate(int(b.f.Fd()), punchHole, off, int64(length)); err != nil {
		return 0, err
	}
	return int(length), nil
}

func (b *fileBackend) Flush() error {
	b.flushes.Add(1)
	return syscall.Fdatasync(int(b.f.Fd()))
}

func (b *fileBackend) Size() int64 { return b.size }

// startServer starts an NBD frontend for volume "vol" on listen and stops it
// at the end of the test.
func startServer(t testing.TB, cfg Config, size int64, be frontend.Backend) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Startup(ctx, "vol", size, be); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// unixListen returns a listen spec for a socket in a fresh temporary directory.
// Socket paths are limited to 108 bytes, so it avoids t.TempDir's long names.
func unixListen(t testing.TB) (spec, path string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nbd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path = filepath.Join(dir, "s.sock")
	return "unix:" + path, path
}
