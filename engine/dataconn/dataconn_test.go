package dataconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// memStore is an in-memory Handler for protocol tests.
type memStore struct {
	mu      sync.Mutex
	data    []byte
	flushes int
	block   chan struct{} // when set, reads wait on it
	failW   error
}

func newMemStore(size int) *memStore { return &memStore{data: make([]byte, size)} }

func (m *memStore) ReadAt(p []byte, off int64) (int, error) {
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memStore) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failW != nil {
		return 0, m.failW
	}
	if off < 0 || off+int64(len(p)) > int64(len(m.data)) {
		return 0, fmt.Errorf("write beyond end: %d+%d", off, len(p))
	}
	return copy(m.data[off:], p), nil
}

func (m *memStore) UnmapAt(length uint32, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+int64(length) > int64(len(m.data)) {
		return 0, fmt.Errorf("unmap beyond end: %d+%d", off, length)
	}
	clear(m.data[off : off+int64(length)])
	return int(length), nil
}

func (m *memStore) Flush() error {
	m.mu.Lock()
	m.flushes++
	m.mu.Unlock()
	return nil
}

func (m *memStore) PingResponse() error { return nil }

func (m *memStore) setFailW(err error) {
	m.mu.Lock()
	m.failW = err
	m.mu.Unlock()
}

func startServer(t testing.TB, h Handler) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, nil)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

func dial(t testing.TB, addr string, o Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, "tcp", addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Seq: 0xdeadbeef, Type: TypeUnmap, Offset: -5, Size: 4096, DataLen: 7}
	var b [HeaderSize]byte
	h.Encode(b[:])
	if b[0] != 0x01 || b[1] != 0x1b {
		t.Fatalf("magic bytes % x, want 01 1b (little endian 0x1b01)", b[:2])
	}
	got, err := DecodeHeader(b[:])
	if err != nil || got != h {
		t.Fatalf("decode: %+v %v, want %+v", got, err, h)
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	var b [HeaderSize]byte
	(&Header{Type: TypeWrite, DataLen: MaxDataLen + 1}).Encode(b[:])
	if _, err := DecodeHeader(b[:]); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	(&Header{Type: typeEnd}).Encode(b[:])
	if _, err := DecodeHeader(b[:]); !errors.Is(err, ErrBadType) {
		t.Errorf("bad type: %v", err)
	}
	b[0] = 0
	if _, err := DecodeHeader(b[:]); !errors.Is(err, ErrBadMagic) {
		t.Errorf("bad magic: %v", err)
	}
	if _, err := DecodeHeader(b[:5]); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short: %v", err)
	}
	for _, h := range []Header{
		{Type: TypeRead, DataLen: 1}, {Type: TypeRead, Size: MaxDataLen + 1},
		{Type: TypeResponse}, {Type: TypeWrite, Offset: -1}, {Type: TypePing, DataLen: 3},
	} {
		if err := h.ValidRequest(); err == nil {
			t.Errorf("%+v accepted as request", h)
		}
	}
}

func TestReadWriteUnmapFlush(t *testing.T) {
	st := newMemStore(1 << 20)
	_, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 3, Flush: true})
	want := make([]byte, 1<<20)
	rand.New(rand.NewSource(1)).Read(want)
	// Concurrent writes of distinct 4 KiB blocks over all connections.
	var wg sync.WaitGroup
	for i := 0; i < 256; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			off := int64(i) * 4096
			if n, err := c.WriteAt(want[off:off+4096], off); err != nil || n != 4096 {
				t.Errorf("write %d: %d %v", i, n, err)
			}
		}(i)
	}
	wg.Wait()
	got := make([]byte, 1<<20)
	if n, err := c.ReadAt(got, 0); err != nil || n != len(got) {
		t.Fatalf("read: %d %v", n, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read back differs")
	}
	if n, err := c.UnmapAt(8192, 4096); err != nil || n != 8192 {
		t.Fatalf("unmap: %d %v", n, err)
	}
	if _, err := c.ReadAt(got[:16384], 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[4096:12288], make([]byte, 8192)) || !bytes.Equal(got[:4096], want[:4096]) {
		t.Fatal("unmapped range not zero or neighbour changed")
	}
	if err := c.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	st.mu.Lock()
	flushes := st.flushes
	st.mu.Unlock()
	if flushes != 1 {
		t.Fatalf("store saw %d flushes, want 1", flushes)
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
}

// TestFlushOnlyWhenListed: a client whose replica did not list the flush
// extension (a Longhorn replica) never sends type 9, which Longhorn's
// replica drops without an answer; Flush is complete at once.
func TestFlushOnlyWhenListed(t *testing.T) {
	st := newMemStore(1 << 16)
	_, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 1, Timeout: 200 * time.Millisecond})
	if err := c.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if _, err := c.Start(TypeFlush, nil, 0, 0).Wait(); err != nil {
		t.Fatalf("flush op: %v", err)
	}
	st.mu.Lock()
	flushes := st.flushes
	st.mu.Unlock()
	if flushes != 0 {
		t.Fatalf("store saw %d flushes, want none sent", flushes)
	}
	if o := OptionsFor(Options{}, []string{ExtensionFlush, "future-thing"}); !o.Flush || o.Local || o.Shm {
		t.Fatalf("OptionsFor: %+v", o)
	}
}

func TestRemoteErrorsKeepClient(t *testing.T) {
	st := newMemStore(1 << 16)
	_, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 1})
	buf := make([]byte, 4096)
	// EOF: read past the end.
	if n, err := c.ReadAt(buf, 1<<16-100); !errors.Is(err, io.ErrUnexpectedEOF) || n != 100 {
		t.Fatalf("short read: %d %v", n, err)
	}
	// Error: write past the end.
	var re *RemoteError
	if _, err := c.WriteAt(buf, 1<<16); !errors.As(err, &re) {
		t.Fatalf("write past end: %v", err)
	}
	// ENOSPC.
	st.setFailW(fmt.Errorf("disk full: %w", syscall.ENOSPC))
	if _, err := c.WriteAt(buf, 0); !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("enospc: %v", err)
	}
	st.setFailW(nil)
	if _, err := c.WriteAt(make([]byte, MaxDataLen+4096), 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized write: %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("client failed after remote errors: %v", c.Err())
	}
	if _, err := c.WriteAt(buf, 0); err != nil {
		t.Fatal(err)
	}
}

func TestTimeoutFailsClient(t *testing.T) {
	st := newMemStore(1 << 16)
	st.block = make(chan struct{})
	_, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 2, Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := c.ReadAt(make([]byte, 4096), 0)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("client not failed after timeout")
	}
	if _, err := c.WriteAt(make([]byte, 4096), 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("request after failure: %v", err)
	}
	close(st.block)
}

func TestServerDeathFailsClient(t *testing.T) {
	st := newMemStore(1 << 16)
	s, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 2})
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client did not notice the server going away")
	}
	if _, err := c.ReadAt(make([]byte, 4096), 0); err == nil {
		t.Fatal("read succeeded on a dead client")
	}
}

// TestServerRejectsGarbage: a peer that breaks the protocol gets its connection
// closed and the server keeps serving others.
func TestServerRejectsGarbage(t *testing.T) {
	st := newMemStore(1 << 16)
	_, addr := startServer(t, st)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("expected clean close, got %v", err)
	}
	c := dial(t, addr, Options{Conns: 1})
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
}

// TestClientRejectsUnknownSeq: a server answering a request that was never
// sent fails the client instead of corrupting another request.
func TestClientRejectsUnknownSeq(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		var hb [HeaderSize]byte
		_, _ = io.ReadFull(nc, hb[:])
		(&Header{Seq: 999, Type: TypeResponse}).Encode(hb[:])
		_, _ = nc.Write(hb[:])
		_, _ = io.Copy(io.Discard, nc)
	}()
	c := dial(t, l.Addr().String(), Options{Conns: 1})
	if err := c.Ping(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("want protocol error, got %v", err)
	}
}

// TestConcurrentMixedIO: many goroutines with reads and writes of several
// sizes on their own regions, over 1 and 3 connections; every read returns
// what that goroutine wrote last (the reader role passes between them).
func TestConcurrentMixedIO(t *testing.T) {
	for _, conns := range []int{1, 3} {
		t.Run(fmt.Sprintf("conns%d", conns), func(t *testing.T) {
			st := newMemStore(8 << 20)
			_, addr := startServer(t, st)
			c := dial(t, addr, Options{Conns: conns})
			var wg sync.WaitGroup
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(g)))
					base := int64(g) * 512 << 10
					shadow := make([]byte, 512<<10)
					for i := 0; i < 100; i++ {
						size := 4096 << rng.Intn(4)
						off := int64(rng.Intn(len(shadow)-size+1)) &^ 4095
						buf := make([]byte, size)
						if rng.Intn(2) == 0 {
							rng.Read(buf)
							if _, err := c.WriteAt(buf, base+off); err != nil {
								t.Error(err)
								return
							}
							copy(shadow[off:], buf)
							continue
						}
						if _, err := c.ReadAt(buf, base+off); err != nil {
							t.Error(err)
							return
						}
						if !bytes.Equal(buf, shadow[off:off+int64(size)]) {
							t.Errorf("goroutine %d: read %d bytes at %d differs from what was written", g, size, off)
							return
						}
					}
				}(g)
			}
			wg.Wait()
		})
	}
}

// TestOutOfOrderAnswers: a server may answer in any order (Longhorn's replica
// serves requests concurrently); each request still gets its own answer,
// whichever waiter happens to read it.
func TestOutOfOrderAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 8
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		var hs []Header
		var hb [HeaderSize]byte
		for len(hs) < n {
			if _, err := io.ReadFull(nc, hb[:]); err != nil {
				return
			}
			h, err := DecodeHeader(hb[:])
			if err != nil || h.Type == TypePing {
				continue
			}
			hs = append(hs, h)
		}
		for i := len(hs) - 1; i >= 0; i-- { // answer newest first
			data := bytes.Repeat([]byte{byte(hs[i].Offset / 4096)}, int(hs[i].Size))
			(&Header{Seq: hs[i].Seq, Type: TypeResponse, Size: hs[i].Size, DataLen: hs[i].Size}).Encode(hb[:])
			_, _ = nc.Write(append(hb[:], data...))
			time.Sleep(time.Millisecond)
		}
		_, _ = io.Copy(io.Discard, nc)
	}()
	c := dial(t, l.Addr().String(), Options{Conns: 1})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			buf := make([]byte, 4096)
			if _, err := c.ReadAt(buf, int64(i)*4096); err != nil {
				t.Error(err)
				return
			}
			if buf[0] != byte(i) || buf[4095] != byte(i) {
				t.Errorf("request %d got the answer of request %d", i, buf[0])
			}
		}(i)
	}
	wg.Wait()
}

// TestWaitOrderIndependent: requests started together and waited for in
// reverse order all complete (the last one waited for was read by others).
func TestWaitOrderIndependent(t *testing.T) {
	st := newMemStore(1 << 20)
	_, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 1})
	var ops []*Op
	for i := 0; i < 32; i++ {
		ops = append(ops, c.Start(TypeWrite, bytes.Repeat([]byte{byte(i)}, 4096), int64(i)*4096, 4096))
	}
	for i := len(ops) - 1; i >= 0; i-- {
		if n, err := ops[i].Wait(); err != nil || n != 4096 {
			t.Fatalf("op %d: %d %v", i, n, err)
		}
	}
	buf := make([]byte, 4096)
	for i := 0; i < 32; i++ {
		if _, err := c.ReadAt(buf, int64(i)*4096); err != nil || buf[0] != byte(i) {
			t.Fatalf("read %d: %v %d", i, err, buf[0])
		}
	}
}

// TestIdleServerDeathNoticedByPing: with nobody waiting, the pings read the
// connection, so a replica that goes away while idle fails the client.
func TestIdleServerDeathNoticedByPing(t *testing.T) {
	st := newMemStore(1 << 16)
	s, addr := startServer(t, st)
	c := dial(t, addr, Options{Conns: 2, PingInterval: 50 * time.Millisecond})
	time.Sleep(150 * time.Millisecond) // a few pings answered
	if err := c.Err(); err != nil {
		t.Fatalf("client failed while the server was up: %v", err)
	}
	s.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client did not notice the server going away")
	}
}

// TestPingAllMeansCounted: after PingAll every connection of the client is
// counted by the server (an engine's notInUse check relies on it), for
// many dials in a row.
func TestPingAllMeansCounted(t *testing.T) {
	s, addr := startServer(t, newMemStore(1<<20))
	for i := 0; i < 50; i++ {
		c := dial(t, addr, Options{Conns: 3})
		if err := c.PingAll(); err != nil {
			t.Fatal(err)
		}
		if n := s.Conns(); n != 3 {
			t.Fatalf("dial %d: server counts %d connections after PingAll, want 3", i, n)
		}
		c.Close()
		for deadline := time.Now().Add(5 * time.Second); s.Conns() != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("dial %d: %d connections still counted after Close", i, s.Conns())
			}
		}
	}
}
