package blockdev

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// fileBackend is a frontend.Backend over a sparse file: what the engine
// controller does with replicas, without them.
type fileBackend struct {
	mu      sync.Mutex
	f       *os.File
	size    int64
	flushes int
}

func newFileBackend(t *testing.T, size int64) *fileBackend {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "backend.img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &fileBackend{f: f, size: size}
}

func (b *fileBackend) ReadAt(p []byte, off int64) (int, error)  { return b.f.ReadAt(p, off) }
func (b *fileBackend) WriteAt(p []byte, off int64) (int, error) { return b.f.WriteAt(p, off) }
func (b *fileBackend) UnmapAt(n uint32, off int64) (int, error) {
	err := unix.Fallocate(int(b.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, int64(n))
	return int(n), err
}
func (b *fileBackend) Flush() error {
	b.mu.Lock()
	b.flushes++
	b.mu.Unlock()
	return b.f.Sync()
}
func (b *fileBackend) Size() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size
}
func (b *fileBackend) grow(t *testing.T, size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	b.size = size
}

// requireFUSE skips (or fails under make test) without root, FUSE and loop devices.
func requireFUSE(t *testing.T) {
	t.Helper()
	testutil.RequireTool(t, "blkid")
	p := ProbeHost()
	if os.Geteuid() != 0 || !p.FUSE {
		if testutil.ToolsRequired() {
			t.Fatalf("the blockdev tests need root, /dev/fuse and /dev/loop-control (euid %d, probe %+v)", os.Geteuid(), p)
		}
		t.Skip("needs root, /dev/fuse and loop devices")
	}
}

// testConfig keeps the device node and state of a test in its own directories.
func testConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	return Config{DevDir: filepath.Join(dir, "dev"), FuseDir: filepath.Join(dir, "state"), Mode: ModeFUSE}
}

// volumeName is unique per test run, so loop tags of parallel runs never meet.
func volumeName(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))[:min(20, len(t.Name()))] + "-" + hexs(b)
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// directIO writes p at off through dev with O_DIRECT and reads it back.
func directIO(t *testing.T, dev string, p []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := alignedBuf(len(p))
	copy(buf, p)
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatalf("write %s: %v", dev, err)
	}
	got := alignedBuf(len(p))
	if _, err := f.ReadAt(got, off); err != nil {
		t.Fatalf("read %s: %v", dev, err)
	}
	if !bytes.Equal(got, p) {
		t.Fatalf("read back differs at offset %d", off)
	}
}

func alignedBuf(n int) []byte {
	b, err := unix.Mmap(-1, 0, max(n, 4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	return b[:n]
}

// waitGone polls until cond is false or fails after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loopsOf lists every attached loop device carrying volume's prefix, or
// reading volume's FUSE file under fuseDir when its tag cannot be read.
func loopsOf(fuseDir, volume string) ([]string, error) {
	file := filepath.Join(fuseDir, volume, volume)
	return loopsMatching(func(l attachedLoop) bool {
		if l.tagKnown {
			return strings.HasPrefix(l.tag, loopPrefix(volume))
		}
		return ownedLoop(l, "", file)
	})
}
