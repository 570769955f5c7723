package dataconn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/shm"
)

// startLocalServer serves h on a fresh abstract unix socket, as a replica's
// LocalName listener.
func startLocalServer(t testing.TB, h Handler) string {
	t.Helper()
	addr := fmt.Sprintf("@longhorn-test-%d-%d", time.Now().UnixNano(), rand.Int63())
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, nil)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return addr
}

// testRegions creates a write and a read region of 64 KiB each.
func testRegions(tb testing.TB) (w, r *shm.Region) {
	tb.Helper()
	w, err := shm.Create("test-w", 64<<10)
	if err == nil {
		r, err = shm.Create("test-r", 64<<10)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return w, r
}

func dialLocal(t testing.TB, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialConns(ctx, "unix", addr, Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestShmRoundTrip writes through the arena and the heap and reads back
// through the read region, checking every byte and that the shared memory
// path was taken.
func TestShmRoundTrip(t *testing.T) {
	st := newMemStore(4 << 20)
	c := dialLocal(t, startLocalServer(t, st))
	for _, cc := range c.conns {
		if !cc.shm {
			t.Fatal("replica did not take the shared memory")
		}
	}
	rng := rand.New(rand.NewSource(1))
	want := make([]byte, 4<<20)
	for i := 0; i < 40; i++ {
		n := (1 + rng.Intn(64)) * 4096
		off := int64(rng.Intn(len(want)-n)) &^ 4095
		var p []byte
		if i%2 == 0 {
			if p = shm.Arena().Get(n); p == nil {
				t.Fatal("arena full")
			}
		} else {
			p = make([]byte, n)
		}
		rng.Read(p)
		copy(want[off:], p)
		if _, err := c.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			shm.Arena().Put(p)
		}
	}
	if !bytes.Equal(st.data, want) {
		t.Fatal("replica data differs from what was written")
	}
	got := make([]byte, 256<<10)
	for off := int64(0); off < int64(len(want)); off += int64(len(got)) {
		if _, err := c.ReadAt(got, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[off:off+int64(len(got))]) {
			t.Fatalf("read at %d differs", off)
		}
	}
	// A read across the end: EOF with the bytes that exist.
	n, err := c.ReadAt(got, int64(len(want))-4096)
	if n != 4096 || !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(got[:n], want[len(want)-4096:]) {
		t.Fatalf("read past the end: %d %v", n, err)
	}
	// Every read block went back to the region: the first 256 KiB block and
	// the 4 KiB one after it are handed out again.
	b1, b2 := c.rregion.Get(len(got)), c.rregion.Get(4096)
	off1, _ := c.rregion.Offset(b1)
	off2, _ := c.rregion.Offset(b2)
	if off1 != 0 || off2 != int64(len(got)) {
		t.Fatalf("read blocks not returned: new blocks at %d and %d", off1, off2)
	}
}

// TestShmWriteErrorKeepsConnection: a replica error on ShmWrite is an answer,
// not a broken connection.
func TestShmWriteError(t *testing.T) {
	st := newMemStore(1 << 20)
	c := dialLocal(t, startLocalServer(t, st))
	st.setFailW(errors.New("disk on fire"))
	p := shm.Arena().Get(4096)
	defer shm.Arena().Put(p)
	var re *RemoteError
	if _, err := c.WriteAt(p, 0); !errors.As(err, &re) {
		t.Fatalf("got %v, want RemoteError", err)
	}
	st.setFailW(nil)
	if _, err := c.WriteAt(p, 0); err != nil || c.Err() != nil {
		t.Fatalf("after an error answer: %v / %v", err, c.Err())
	}
}

// rawLocal opens a unix connection and offers the given descriptors.
func rawLocal(t *testing.T, addr string, fds []int, wsize, rsize uint64) (*net.UnixConn, Header) {
	t.Helper()
	nc, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	uc := nc.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(5 * time.Second))
	var msg [HeaderSize + attachPayload]byte
	(&Header{Seq: 7, Type: TypeShmAttach, DataLen: attachPayload}).Encode(msg[:])
	binary.LittleEndian.PutUint64(msg[HeaderSize:], wsize)
	binary.LittleEndian.PutUint64(msg[HeaderSize+8:], rsize)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := uc.WriteMsgUnix(msg[:], oob, nil); err != nil {
		t.Fatal(err)
	}
	var resp [HeaderSize]byte
	if _, err := io.ReadFull(uc, resp[:]); err != nil {
		t.Fatal(err)
	}
	h, err := DecodeHeader(resp[:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, uc, int64(h.DataLen)); err != nil {
		t.Fatal(err)
	}
	return uc, h
}

func roundTrip(t *testing.T, uc *net.UnixConn, h Header, ref uint64) (Header, error) {
	t.Helper()
	msg := make([]byte, HeaderSize, HeaderSize+shmRefSize)
	h.Encode(msg)
	if h.DataLen == shmRefSize {
		msg = binary.LittleEndian.AppendUint64(msg, ref)
	}
	if _, err := uc.Write(msg); err != nil {
		return Header{}, err
	}
	var resp [HeaderSize]byte
	if _, err := io.ReadFull(uc, resp[:]); err != nil {
		return Header{}, err
	}
	return DecodeHeader(resp[:])
}

// TestShmRefusesUnsealed: a region that could shrink under the replica is
// refused with an Error answer and the connection serves on without it.
func TestShmRefusesUnsealed(t *testing.T) {
	st := newMemStore(1 << 20)
	addr := startLocalServer(t, st)
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	_ = unix.Ftruncate(fd, 1<<20)
	uc, h := rawLocal(t, addr, []int{fd, fd}, 1<<20, 1<<20)
	if h.Type != TypeError || h.Seq != 7 {
		t.Fatalf("answer %+v, want Error for seq 7", h)
	}
	if r, err := roundTrip(t, uc, Header{Seq: 8, Type: TypePing}, 0); err != nil || r.Type != TypeResponse {
		t.Fatalf("ping after refusal: %+v %v", r, err)
	}
	// Without regions, a ShmWrite is a protocol error: the connection closes.
	if r, err := roundTrip(t, uc, Header{Seq: 9, Type: TypeShmWrite, Size: 4096, DataLen: shmRefSize}, 0); err == nil {
		t.Fatalf("ShmWrite without regions answered %+v", r)
	}
	_, h2 := rawLocal(t, addr, nil, 1<<20, 1<<20)
	if h2.Type != TypeError {
		t.Fatalf("attach without descriptors answered %+v", h2)
	}
}

// TestShmHostileReference: a reference outside the region closes the
// connection and changes nothing; so does a mismatch with the announced sizes.
func TestShmHostileReference(t *testing.T) {
	st := newMemStore(1 << 20)
	addr := startLocalServer(t, st)
	w, r := testRegions(t)
	if _, h := rawLocal(t, addr, []int{w.Fd(), r.Fd()}, 1<<20, 64<<10); h.Type != TypeError {
		t.Fatalf("wrong announced size answered %+v", h)
	}
	for _, c := range []struct {
		typ  MsgType
		size uint32
		ref  uint64
	}{
		{TypeShmWrite, 4096, 64 << 10},
		{TypeShmWrite, 8192, 60 << 10},
		{TypeShmRead, 4096, 1 << 63},
		{TypeShmRead, 128 << 10, 0},
	} {
		uc, h := rawLocal(t, addr, []int{w.Fd(), r.Fd()}, 64<<10, 64<<10)
		if h.Type != TypeResponse {
			t.Fatalf("attach answered %+v", h)
		}
		if resp, err := roundTrip(t, uc, Header{Seq: 1, Type: c.typ, Size: c.size, DataLen: shmRefSize}, c.ref); err == nil {
			t.Errorf("%v of %d at %d answered %+v, want the connection closed", c.typ, c.size, c.ref, resp)
		}
	}
	if !bytes.Equal(st.data, make([]byte, len(st.data))) {
		t.Error("a refused request changed the replica")
	}
}

// TestShmOverTCP: the shared memory messages mean nothing over TCP.
func TestShmOverTCP(t *testing.T) {
	_, addr := startServer(t, newMemStore(1<<20))
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	var msg [HeaderSize + attachPayload]byte
	(&Header{Type: TypeShmAttach, DataLen: attachPayload}).Encode(msg[:])
	if _, err := nc.Write(msg[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(nc, msg[:1]); err == nil {
		t.Fatal("ShmAttach over TCP was answered")
	}
}

// TestLocalWithoutShm: a unix client that offers no shared memory (an older
// engine) is served as before.
func TestLocalWithoutShm(t *testing.T) {
	st := newMemStore(1 << 20)
	addr := startLocalServer(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, "unix", addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := bytes.Repeat([]byte{0x5a}, 8192)
	if _, err := c.WriteAt(p, 4096); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(p))
	if _, err := c.ReadAt(got, 4096); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("read back: %v", err)
	}
	if c.conns[0].shm {
		t.Fatal("shared memory used without an offer")
	}
}
