package rawio

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func pair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s.sock")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-acc
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return Wrap(c), Wrap(s)
}

// TestStream sends more than the socket buffers hold through Writev with
// many small and some large buffers, so writes hit EAGAIN and partial
// writes, and checks the bytes arrive in order through Read.
func TestStream(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			c, s := pair(t, network)
			if _, ok := c.(*Conn); !ok {
				t.Fatalf("Wrap(%T) did not wrap", c)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var want bytes.Buffer
			var bufs net.Buffers
			for i := 0; i < 3000; i++ { // more than maxIov buffers
				n := rng.IntN(64)
				if i%100 == 0 {
					n = 1 << 20
				}
				b := make([]byte, n)
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
				want.Write(b)
				bufs = append(bufs, b)
			}
			total := int64(want.Len())
			errc := make(chan error, 1)
			go func() {
				n, err := Writev(c, &bufs)
				if err == nil && n != total {
					err = errors.New("short writev")
				}
				if err == nil && len(bufs) != 0 {
					err = errors.New("buffers not consumed")
				}
				if err == nil {
					_, err = c.Write([]byte("end"))
				}
				c.Close()
				errc <- err
			}()
			got, err := io.ReadAll(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(want.Bytes(), "end"...)) {
				t.Fatalf("received %d bytes, differ from the %d sent", len(got), want.Len()+3)
			}
		})
	}
}

// TestDeadlineAndClose checks that a blocked Read honours deadlines and that
// Close from another goroutine ends it with net.ErrClosed.
func TestDeadlineAndClose(t *testing.T) {
	c, s := pair(t, "tcp")
	_ = s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := s.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	_ = s.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read did not return after Close")
	}
	// The peer sees EOF; writing to a connection the peer closed fails.
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from closed peer: %v, want io.EOF", err)
	}
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.Write(make([]byte, 64<<10))
	}
	if err == nil {
		t.Fatal("writes to a closed peer kept succeeding")
	}
}

func TestWrapPipe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, ok := Wrap(a).(*Conn); ok {
		t.Fatal("net.Pipe has no file descriptor and must not be wrapped")
	}
	go func() { _, _ = Writev(a, &net.Buffers{[]byte("ab"), []byte("c")}) }()
	got := make([]byte, 3)
	if _, err := io.ReadFull(b, got); err != nil || string(got) != "abc" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestPreadPwrite(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if n, err := Pwrite(f, data, 4096); err != nil || n != len(data) {
		t.Fatalf("Pwrite: %d, %v", n, err)
	}
	got := make([]byte, len(data))
	if n, err := Pread(f, got, 4096); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("Pread: %d, %v, equal %v", n, err, bytes.Equal(got, data))
	}
	// Reading across the end returns what is there and io.EOF, as ReadAt.
	n, err := Pread(f, got[:8192], int64(4096+len(data)-100))
	if n != 100 || err != io.EOF {
		t.Fatalf("Pread across EOF: %d, %v; want 100, io.EOF", n, err)
	}
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var pe *os.PathError
	if _, err := Pwrite(ro, data[:10], 0); !errors.As(err, &pe) || pe.Path != f.Name() {
		t.Fatalf("Pwrite on a read-only file: %v, want *os.PathError naming the file", err)
	}
}

// TestPreadPwriteOneProc runs the file calls with GOMAXPROCS 1, where they use
// the wrapped system calls, and checks they behave the same.
func TestPreadPwriteOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	TestPreadPwrite(t)
}

// TestReadSpin: a spinning Read returns data that arrives while it spins and,
// once the spin ran out, waits in the poller for data that comes later; a
// TryWritev on a full socket reports blocked and keeps the rest.
func TestReadSpin(t *testing.T) {
	c, s := pair(t, "unix")
	rc := c.(*Conn)
	rc.SetReadSpin(time.Second)
	go func() {
		time.Sleep(time.Millisecond)
		_, _ = s.Write([]byte("a"))
	}()
	buf := make([]byte, 8)
	if n, err := rc.Read(buf); err != nil || string(buf[:n]) != "a" {
		t.Fatalf("spinning read: %q %v", buf[:n], err)
	}
	rc.SetReadSpin(50 * time.Microsecond)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = s.Write([]byte("b"))
	}()
	if n, err := rc.Read(buf); err != nil || string(buf[:n]) != "b" {
		t.Fatalf("read after the spin ran out: %q %v", buf[:n], err)
	}
	big := make([]byte, 16<<20)
	bufs := net.Buffers{big}
	n, blocked, err := rc.TryWritev(&bufs)
	if err != nil || !blocked || n <= 0 || n >= int64(len(big)) || int64(len(bufs[0])) != int64(len(big))-n {
		t.Fatalf("TryWritev of 16 MiB to a peer that does not read: n %d blocked %v err %v rest %d", n, blocked, err, len(bufs[0]))
	}
}
