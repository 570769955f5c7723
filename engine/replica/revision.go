package replica

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// revisionCounter keeps revision.counter (Longhorn revision_counter.go): a
// 4096-byte block holding the counter in ASCII decimal, NUL padded, written
// with O_DIRECT when the filesystem allows it (buffered otherwise).
//
// Every WriteAt/UnmapAt bumps the counter and waits until a value at least as
// large is on disk before it returns, as Longhorn acknowledges a write only
// after its counter update. Concurrent bumps share one disk write (group
// commit): the goroutine that finds no write in progress writes the newest
// value, the others wait for it.
type revisionCounter struct {
	f      *os.File
	direct bool
	block  []byte // revisionBlock bytes, 4096-aligned for O_DIRECT

	mem atomic.Int64 // newest value handed out

	mu        sync.Mutex
	cond      sync.Cond
	persisted int64 // newest value known to be on disk
	writing   bool
	err       error // sticky write error
}

func alignedBlock(n int) []byte {
	raw := make([]byte, n+revisionBlock)
	off := int(uintptr(unsafe.Pointer(&raw[0])) & (revisionBlock - 1))
	if off != 0 {
		off = revisionBlock - off
	}
	return raw[off : off+n : off+n]
}

// openRevisionCounter opens (creating with value 0 when missing) the
// counter file of dir and reads its value.
func openRevisionCounter(dir string) (*revisionCounter, error) {
	path := filepath.Join(dir, RevisionCounterFile)
	_, statErr := os.Stat(path)
	create := errors.Is(statErr, os.ErrNotExist)
	c := &revisionCounter{block: alignedBlock(revisionBlock)}
	c.cond.L = &c.mu
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_DIRECT, 0o600)
	if err == nil {
		c.direct = true
	} else if errors.Is(err, unix.EINVAL) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, err
	}
	c.f = f
	if create {
		if err := c.write(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	v, err := c.read()
	if err != nil {
		f.Close()
		return nil, err
	}
	c.mem.Store(v)
	c.persisted = v
	return c, nil
}

func (c *revisionCounter) read() (int64, error) {
	clear(c.block)
	n, err := c.f.ReadAt(c.block, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	text := strings.TrimRight(string(c.block[:n]), "\x00")
	if text == "" {
		return 0, nil // created but not yet written when the process died
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s holds %q", ErrCorrupt, RevisionCounterFile, text)
	}
	return v, nil
}

// write puts v into the file. Callers serialise (writing flag or exclusive use).
func (c *revisionCounter) write(v int64) error {
	clear(c.block)
	copy(c.block, strconv.FormatInt(v, 10))
	_, err := c.f.WriteAt(c.block, 0)
	return err
}

func (c *revisionCounter) value() int64 { return c.mem.Load() }

// bump increments the counter and returns once the new value (or a newer
// one) is on disk.
func (c *revisionCounter) bump() error {
	v := c.mem.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.persisted < v {
		if c.err != nil {
			return c.err
		}
		if c.writing {
			c.cond.Wait()
			continue
		}
		c.writing = true
		target := c.mem.Load()
		c.mu.Unlock()
		err := c.write(target)
		c.mu.Lock()
		c.writing = false
		if err != nil {
			c.err = fmt.Errorf("replica: write %s: %w", RevisionCounterFile, err)
		} else if target > c.persisted {
			c.persisted = target
		}
		c.cond.Broadcast()
	}
	return nil
}

// set stores v (the engine resets a rebuilding replica to 0); no I/O may be
// in flight (the engine holds its lock).
func (c *revisionCounter) set(v int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.writing {
		c.cond.Wait()
	}
	if err := c.write(v); err != nil {
		return err
	}
	c.mem.Store(v)
	c.persisted = v
	c.err = nil
	return nil
}

func (c *revisionCounter) sync() error { return unix.Fdatasync(int(c.f.Fd())) }

func (c *revisionCounter) close() error { return c.f.Close() }
