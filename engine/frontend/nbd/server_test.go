package nbd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// TestProtocolErrors sends requests real clients never send and checks each
// gets the error the spec asks for, or closes only that connection, and that
// the volume and other connections are unaffected.
func TestProtocolErrors(t *testing.T) {
	const size = 1 << 20
	be := newMemBackend(size)
	spec, _ := unixListen(t)
	s := startServer(t, Config{Listen: spec, MaxPayload: 1 << 20}, size, be)

	c := dialRaw(t, s)
	if sz, fl := c.negotiateGo("vol"); sz != size || fl != transmissionFlags {
		t.Fatalf("GO: size %d flags %#x", sz, fl)
	}
	data := pattern(4096, 1)
	c.request(cmdWrite, 0, 1, 8192, 4096, data)
	expectReply(t, c, 1, 0)

	steps := []struct {
		name    string
		typ     uint16
		flags   uint16
		off     uint64
		length  uint32
		payload []byte
		errno   uint32
	}{
		{"unknown command", 42, 0, 0, 512, nil, errnoInval},
		{"cache", cmdCache, 0, 0, 512, nil, errnoInval},
		{"unknown flag", cmdRead, 1 << 12, 0, 512, nil, errnoInval},
		{"oversize read", cmdRead, 0, 0, 1<<20 + 1, nil, errnoOverflow},
		{"read past end", cmdRead, 0, size - 4096, 8192, nil, errnoInval},
		{"write past end", cmdWrite, 0, size - 4096, 8192, pattern(8192, 9), errnoNoSpc},
		{"oversize write", cmdWrite, 0, 0, 1<<20 + 4096, make([]byte, 1<<20+4096), errnoOverflow},
		{"zeroes past end", cmdWriteZeroes, 0, size, 4096, nil, errnoNoSpc},
		{"trim past end", cmdTrim, 0, size, 4096, nil, errnoInval},
		{"flush", cmdFlush, 0, 0, 0, nil, 0},
		{"zero-length write", cmdWrite, 0, size, 0, nil, 0},
	}
	for i, st := range steps {
		h := uint64(100 + i)
		c.request(st.typ, st.flags, h, st.off, st.length, st.payload)
		if errno, got := c.reply(); errno != st.errno || got != h {
			t.Fatalf("%s: errno %d handle %d, want %d %d", st.name, errno, got, st.errno, h)
		}
	}
	// The connection still works and nothing was written out of range.
	c.request(cmdRead, 0, 7, 8192, 4096, nil)
	expectReply(t, c, 7, 0)
	if got := c.read(4096); !bytes.Equal(got, data) {
		t.Fatal("read after rejected requests returned wrong data")
	}
	if !bytes.Equal(be.snapshot()[size-4096:], make([]byte, 4096)) {
		t.Fatal("rejected write past the end changed the volume")
	}

	// Bad magic closes this connection only; a second connection still works.
	c.write(make([]byte, requestLen))
	c.expectClosed()
	c2 := dialRaw(t, s)
	c2.negotiateGo("")
	c2.request(cmdRead, 0, 8, 8192, 4096, nil)
	expectReply(t, c2, 8, 0)
	if got := c2.read(4096); !bytes.Equal(got, data) {
		t.Fatal("second connection read wrong data")
	}
	// DISC: in-flight requests are answered, then the server closes.
	c2.request(cmdWrite, cmdFlagFUA, 9, 0, 512, pattern(512, 3))
	c2.request(cmdDisc, 0, 10, 0, 0, nil)
	expectReply(t, c2, 9, 0)
	c2.expectClosed()
	if !bytes.Equal(be.snapshot()[:512], pattern(512, 3)) {
		t.Fatal("write before DISC was not applied")
	}
}

func expectReply(t *testing.T, c *rawClient, handle uint64, errno uint32) {
	t.Helper()
	if e, h := c.reply(); e != errno || h != handle {
		t.Fatalf("reply errno %d handle %d, want %d %d", e, h, errno, handle)
	}
}

func TestHandshake(t *testing.T) {
	be := newMemBackend(1 << 20)
	spec, _ := unixListen(t)
	s := startServer(t, Config{Listen: spec}, 1<<20, be)

	t.Run("unknown client flags close", func(t *testing.T) {
		c := dialRaw(t, s)
		c.greet(1 << 5)
		c.expectClosed()
	})
	t.Run("bad option magic closes", func(t *testing.T) {
		c := dialRaw(t, s)
		c.greet(uint32(flagFixedNewstyle))
		c.write(make([]byte, optHeaderLen))
		c.expectClosed()
	})
	t.Run("export name mismatch closes", func(t *testing.T) {
		c := dialRaw(t, s)
		c.greet(uint32(flagFixedNewstyle))
		c.sendOption(optExportName, []byte("other"))
		c.expectClosed()
	})
	for _, noZeroes := range []bool{false, true} {
		t.Run("export name", func(t *testing.T) {
			c := dialRaw(t, s)
			flags, n := uint32(flagFixedNewstyle), exportNameRepLen+exportNameTail
			if noZeroes {
				flags, n = flags|uint32(flagNoZeroes), exportNameRepLen
			}
			c.greet(flags)
			c.sendOption(optExportName, []byte("vol"))
			b := c.read(n)
			if binary.BigEndian.Uint64(b) != 1<<20 || binary.BigEndian.Uint16(b[8:]) != transmissionFlags {
				t.Fatalf("EXPORT_NAME reply % x", b[:10])
			}
			c.request(cmdFlush, 0, 1, 0, 0, nil)
			expectReply(t, c, 1, 0)
		})
	}
	t.Run("options then go", func(t *testing.T) {
		c := dialRaw(t, s)
		c.greet(uint32(flagFixedNewstyle))
		c.sendOption(optStructuredReply, nil)
		if typ, _ := c.optionReply(optStructuredReply); typ != repErrUnsup {
			t.Fatalf("structured reply: %#x", typ)
		}
		c.sendOption(optList, nil)
		if typ, d := c.optionReply(optList); typ != repServer || string(d[4:]) != "vol" {
			t.Fatalf("list: %#x %q", typ, d)
		}
		if typ, _ := c.optionReply(optList); typ != repAck {
			t.Fatalf("list end: %#x", typ)
		}
		c.sendOption(optInfo, bytes.Repeat([]byte{0}, maxOptionLen+1))
		if typ, _ := c.optionReply(optInfo); typ != repErrTooBig {
			t.Fatalf("oversize option: %#x", typ)
		}
		c.sendOption(optGo, goData("missing"))
		if typ, msg := c.optionReply(optGo); typ != repErrUnknown || !strings.Contains(string(msg), "missing") {
			t.Fatalf("unknown export: %#x %q", typ, msg)
		}
		c.sendOption(optGo, goData("vol", infoName))
		for typ := uint32(0); typ != repAck; {
			typ, _ = c.optionReply(optGo)
		}
		c.request(cmdRead, 0, 5, 0, 512, nil)
		expectReply(t, c, 5, 0)
		c.read(512)
	})
	t.Run("abort", func(t *testing.T) {
		c := dialRaw(t, s)
		c.greet(uint32(flagFixedNewstyle))
		c.sendOption(optAbort, nil)
		if typ, _ := c.optionReply(optAbort); typ != repAck {
			t.Fatalf("abort: %#x", typ)
		}
		c.expectClosed()
	})
}

// concurrencyBackend records the most calls it had in flight at once.
type concurrencyBackend struct {
	*memBackend
	cur, max atomic.Int64
}

func (b *concurrencyBackend) WriteAt(p []byte, off int64) (int, error) {
	n := b.cur.Add(1)
	defer b.cur.Add(-1)
	for m := b.max.Load(); n > m && !b.max.CompareAndSwap(m, n); m = b.max.Load() {
	}
	return b.memBackend.WriteAt(p, off)
}

// TestPipelining keeps many requests in flight on one connection: they reach
// the backend concurrently and every handle is answered exactly once.
func TestPipelining(t *testing.T) {
	mb := newMemBackend(1 << 20)
	mb.delay = 20 * time.Millisecond
	be := &concurrencyBackend{memBackend: mb}
	s := startServer(t, Config{Listen: "tcp:127.0.0.1:0"}, 1<<20, be)
	c := dialRaw(t, s)
	c.negotiateGo("vol")
	const n = 64
	for i := range n {
		c.request(cmdWrite, 0, uint64(i), uint64(i)*4096, 4096, pattern(4096, byte(i)))
	}
	seen := map[uint64]bool{}
	for range n {
		errno, h := c.reply()
		if errno != 0 || seen[h] || h >= n {
			t.Fatalf("reply errno %d handle %d (seen %v)", errno, h, seen[h])
		}
		seen[h] = true
	}
	if be.max.Load() < 2 {
		t.Fatalf("at most %d writes in flight, want concurrent dispatch", be.max.Load())
	}
	data := mb.snapshot()
	for i := range n {
		if !bytes.Equal(data[i*4096:(i+1)*4096], pattern(4096, byte(i))) {
			t.Fatalf("block %d wrong", i)
		}
	}
}

func TestManyConnections(t *testing.T) {
	be := newMemBackend(8 << 20)
	spec, _ := unixListen(t)
	s := startServer(t, Config{Listen: spec}, 8<<20, be)
	var wg sync.WaitGroup
	for i := range 8 {
		c := dialRaw(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.negotiateGo("vol")
			for j := range 16 {
				c.request(cmdWrite, 0, uint64(j), uint64(i<<20+j*65536), 65536, pattern(65536, byte(i+j)))
			}
			for range 16 {
				if errno, _ := c.reply(); errno != 0 {
					t.Errorf("conn %d: errno %d", i, errno)
				}
			}
		}()
	}
	wg.Wait()
	data := be.snapshot()
	for i := range 8 {
		for j := range 16 {
			off := i<<20 + j*65536
			if !bytes.Equal(data[off:off+65536], pattern(65536, byte(i+j))) {
				t.Fatalf("conn %d block %d wrong", i, j)
			}
		}
	}
}

func TestWriteZeroesAndTrim(t *testing.T) {
	be := newMemBackend(4 << 20)
	copy(be.data, bytes.Repeat([]byte{0xff}, 4<<20))
	spec, _ := unixListen(t)
	s := startServer(t, Config{Listen: spec}, 4<<20, be)
	c := dialRaw(t, s)
	c.negotiateGo("vol")
	c.request(cmdWriteZeroes, cmdFlagNoHole, 1, 0, 3<<20, nil) // larger than the 1 MiB zero chunk
	expectReply(t, c, 1, 0)
	c.request(cmdWriteZeroes, cmdFlagFUA, 2, 3<<20, 4096, nil)
	expectReply(t, c, 2, 0)
	if be.unmaps.Load() != 0 {
		t.Fatal("WRITE_ZEROES used unmap, which may expose older snapshot data")
	}
	data := be.snapshot()
	if !bytes.Equal(data[:3<<20+4096], make([]byte, 3<<20+4096)) || data[3<<20+4096] != 0xff {
		t.Fatal("WRITE_ZEROES did not zero exactly the range")
	}
	c.request(cmdTrim, 0, 3, 4<<20-8192, 8192, nil)
	expectReply(t, c, 3, 0)
	if be.unmaps.Load() != 1 {
		t.Fatalf("TRIM made %d unmap calls, want 1", be.unmaps.Load())
	}
	if be.flushes.Load() != 1 {
		t.Fatalf("FUA write zeroes made %d flushes, want 1", be.flushes.Load())
	}
}

func TestFlusherCoalescesAndCovers(t *testing.T) {
	var writes, durable, calls atomic.Int64
	f := &flusher{fn: func() error {
		calls.Add(1)
		covered := writes.Load()
		time.Sleep(5 * time.Millisecond)
		for d := durable.Load(); covered > d && !durable.CompareAndSwap(d, covered); d = durable.Load() {
		}
		return nil
	}}
	const callers = 50
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := writes.Add(1) // a write completed before the flush was asked for
			if err := f.flush(); err != nil {
				t.Error(err)
			}
			if durable.Load() < w {
				t.Errorf("flush returned before write %d was durable (durable %d)", w, durable.Load())
			}
		}()
	}
	wg.Wait()
	if calls.Load() >= callers {
		t.Fatalf("%d backend flushes for %d callers, want coalescing", calls.Load(), callers)
	}
}

func TestShutdownWaitsForInflight(t *testing.T) {
	be := newMemBackend(1 << 20)
	be.delay = 300 * time.Millisecond
	s, err := New(Config{Listen: "tcp:127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Startup(context.Background(), "vol", 1<<20, be); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, s)
	c.negotiateGo("vol")
	c.request(cmdWrite, 0, 1, 0, 4096, pattern(4096, 5))
	time.Sleep(50 * time.Millisecond) // let the server read it
	done := make(chan error, 1)
	go func() { done <- s.Shutdown() }()
	expectReply(t, c, 1, 0)
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(be.snapshot()[:4096], pattern(4096, 5)) {
		t.Fatal("in-flight write lost at shutdown")
	}
	if s.State() != StateDown || s.Endpoint() != "" {
		t.Fatalf("after shutdown: state %q endpoint %q", s.State(), s.Endpoint())
	}
}

func TestLifecycle(t *testing.T) {
	spec, path := unixListen(t)
	s, err := New(Config{Listen: spec})
	if err != nil {
		t.Fatal(err)
	}
	be := newMemBackend(2 << 20)
	ctx := context.Background()
	// A stale socket from a dead process is replaced.
	stale, err := New(Config{Listen: spec})
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.Startup(ctx, "vol", 1<<20, be); err != nil {
		t.Fatal(err)
	}
	stale.ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	if err := stale.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // Startup after Shutdown works
		if err := s.Startup(ctx, "vol", 1<<20, be); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := s.Startup(ctx, "vol", 1<<20, be); !errors.Is(err, ErrAlreadyUp) {
			t.Fatalf("second Startup: %v", err)
		}
		if want := "nbd+unix:///vol?socket=" + path; s.Endpoint() != want || s.State() != StateUp {
			t.Fatalf("endpoint %q state %q, want %q up", s.Endpoint(), s.State(), want)
		}
		if err := s.Expand(2 << 20); err != nil {
			t.Fatal(err)
		}
		if err := s.Expand(1 << 20); !errors.Is(err, ErrShrink) {
			t.Fatalf("shrink: %v", err)
		}
		c := dialRaw(t, s)
		if size, _ := c.negotiateGo("vol"); size != 2<<20 {
			t.Fatalf("size after expand %d", size)
		}
		c.request(cmdRead, 0, 1, 3<<19, 4096, nil)
		expectReply(t, c, 1, 0)
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("socket left after shutdown: %v", err)
		}
	}
	// A regular file at the socket path is never removed.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Startup(ctx, "vol", 1<<20, be); !errors.Is(err, ErrListen) {
		t.Fatalf("startup over a regular file: %v", err)
	}
	tcp, err := New(Config{Listen: "tcp:127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tcp.Startup(ctx, "vol", 1<<20, be); err != nil {
		t.Fatal(err)
	}
	defer tcp.Shutdown()
	if ep := tcp.Endpoint(); !strings.HasPrefix(ep, "nbd://127.0.0.1:") || !strings.HasSuffix(ep, "/vol") || strings.Contains(ep, ":0/") {
		t.Fatalf("tcp endpoint %q", ep)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Listen: "unix:relative"},
		{Listen: "http://x"},
		{MaxPayload: 4096},
		{MaxPayload: MaxMaxPayload + 1},
		{Description: strings.Repeat("d", maxStringBytes+1)},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	s, _ := New(Config{Listen: "unix:" + filepath.Join(t.TempDir(), "s")})
	if err := s.Startup(context.Background(), "", 1, newMemBackend(1)); !errors.Is(err, ErrConfig) {
		t.Errorf("empty name: %v", err)
	}
	if err := s.Startup(context.Background(), "v", 1, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("nil backend: %v", err)
	}
}

// slowFlushBackend blocks Flush until release is closed.
type slowFlushBackend struct {
	*memBackend
	entered chan struct{}
	release chan struct{}
}

func (b *slowFlushBackend) Flush() error {
	close(b.entered)
	<-b.release
	return b.memBackend.Flush()
}

// TestSlowFlushDoesNotBlockReads: a READ that arrives while a FLUSH is still
// in the backend is answered first. (A READ or WRITE on an idle connection
// runs on the reading goroutine; FLUSH never does.) Then a READ alone at
// depth 1 is answered with the right data.
func TestSlowFlushDoesNotBlockReads(t *testing.T) {
	mb := newMemBackend(1 << 20)
	copy(mb.data[8192:], pattern(4096, 7))
	be := &slowFlushBackend{memBackend: mb, entered: make(chan struct{}), release: make(chan struct{})}
	s := startServer(t, Config{Listen: "tcp:127.0.0.1:0"}, 1<<20, be)
	c := dialRaw(t, s)
	c.negotiateGo("vol")
	c.request(cmdFlush, 0, 1, 0, 0, nil)
	select {
	case <-be.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("flush did not reach the backend")
	}
	c.request(cmdRead, 0, 2, 8192, 4096, nil)
	expectReply(t, c, 2, 0)
	if got := c.read(4096); !bytes.Equal(got, pattern(4096, 7)) {
		t.Fatal("read returned wrong data while a flush was pending")
	}
	close(be.release)
	expectReply(t, c, 1, 0)
	c.request(cmdRead, 0, 3, 8192, 4096, nil)
	expectReply(t, c, 3, 0)
	if got := c.read(4096); !bytes.Equal(got, pattern(4096, 7)) {
		t.Fatal("depth-1 read returned wrong data")
	}
}
