package dataconn

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// byteConn is a net.Conn whose reads come from a fixed input and whose writes
// are discarded, so a fuzz input is one whole connection's worth of bytes.
type byteConn struct{ r *bytes.Reader }

func (c *byteConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *byteConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *byteConn) Close() error                       { return nil }
func (c *byteConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (c *byteConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (c *byteConn) SetDeadline(t time.Time) error      { return nil }
func (c *byteConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *byteConn) SetWriteDeadline(t time.Time) error { return nil }

func seedMessages() [][]byte {
	var seeds [][]byte
	msg := func(h Header, data []byte) []byte {
		var b [HeaderSize]byte
		h.DataLen = uint32(len(data))
		h.Encode(b[:])
		return append(b[:], data...)
	}
	seeds = append(seeds,
		msg(Header{Seq: 1, Type: TypeRead, Offset: 0, Size: 4096}, nil),
		msg(Header{Seq: 2, Type: TypeWrite, Offset: 4096, Size: 8}, []byte("abcdefgh")),
		append(msg(Header{Seq: 3, Type: TypeUnmap, Size: 4096}, nil), msg(Header{Seq: 4, Type: TypeFlush}, nil)...),
		msg(Header{Seq: 5, Type: TypePing}, nil),
		msg(Header{Seq: 6, Type: TypeResponse, Size: 3}, []byte("xyz")),
		msg(Header{Seq: 7, Type: TypeError}, []byte("boom")),
		msg(Header{Seq: 8, Type: TypeENOSPC}, []byte("full")),
		msg(Header{Seq: 9, Type: TypeEOF}, []byte("ab")),
		msg(Header{Seq: 10, Type: TypeClose}, nil),
		msg(Header{Seq: 11, Type: TypeShmWrite, Offset: 8192, Size: 4096}, []byte{0, 16, 0, 0, 0, 0, 0, 0}),
		msg(Header{Seq: 12, Type: TypeShmRead, Offset: 0, Size: 4096}, []byte{0, 0, 0, 0, 0, 0, 0, 0}),
		msg(Header{Seq: 13, Type: TypeShmRead, Size: 4096}, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}),
		msg(Header{Seq: 14, Type: TypeShmAttach}, make([]byte, 16)),
		[]byte{0x01, 0x1b, 0xff},
	)
	return seeds
}

// FuzzServerConn feeds arbitrary bytes to a served connection: the server must
// never panic, and each message it accepts is bounded by MaxDataLen.
func FuzzServerConn(f *testing.F) {
	for _, s := range seedMessages() {
		f.Add(s)
	}
	st := newMemStore(1 << 20)
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	s := NewServer(st, quiet)
	f.Fuzz(func(t *testing.T, in []byte) {
		s.ServeConn(&byteConn{r: bytes.NewReader(in)})
	})
}

// FuzzServerConnShm is FuzzServerConn on a connection that has shared memory
// regions (64 KiB each): references must stay inside them.
func FuzzServerConnShm(f *testing.F) {
	for _, s := range seedMessages() {
		f.Add(s)
	}
	st := newMemStore(1 << 20)
	w, r := testRegions(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		nc := &byteConn{r: bytes.NewReader(in)}
		sc := &serverConn{h: st, nc: nc, br: bufio.NewReaderSize(nc, serverReadBuffer), wregion: w, rregion: r}
		_ = sc.loop()
		sc.release()
	})
}

// FuzzClientResponses feeds arbitrary bytes to a client connection's decoder
// with requests of every kind pending: it must never panic, never write past a
// request's buffer, and complete each request at most once.
func FuzzClientResponses(f *testing.F) {
	for _, s := range seedMessages() {
		f.Add(s)
	}
	_, slots := testRegions(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &Client{addr: "fuzz", done: make(chan struct{}), rregion: slots}
		cc := newClientConn(c, &byteConn{r: bytes.NewReader(nil)})
		c.conns = []*clientConn{cc}
		types := []MsgType{TypeRead, TypeWrite, TypeUnmap, TypeFlush, TypePing, TypeRead}
		ops := make([]*Op, 0, len(types))
		for i, typ := range types {
			op := &Op{typ: typ, sig: make(chan struct{}, 1), cc: cc}
			if typ == TypeRead {
				op.buf = make([]byte, 8*(i+1))
			}
			if i == len(types)-1 { // a ShmRead
				op.slot = slots.Get(len(op.buf))
			}
			cc.pending[uint32(i+1)] = op
			ops = append(ops, op)
		}
		br := bufio.NewReaderSize(bytes.NewReader(in), 64<<10)
		doubles := doubleCompletions.Load()
		for cc.readOne(br) == nil {
		}
		if doubleCompletions.Load() != doubles {
			t.Fatal("request completed twice")
		}
		for _, op := range ops {
			if op.typ == TypeRead && op.n > len(op.buf) {
				t.Fatalf("read reported %d bytes into a %d-byte buffer", op.n, len(op.buf))
			}
		}
		_, _ = io.Copy(io.Discard, br)
	})
}
