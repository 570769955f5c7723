package nbd

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// streamConn is a net.Conn that reads a fixed byte stream and counts (and
// keeps a prefix of) what the server writes.
type streamConn struct {
	r       *bytes.Reader
	written atomic.Int64
	prefix  bytes.Buffer
}

func (c *streamConn) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *streamConn) Write(p []byte) (int, error) {
	if room := 4096 - c.prefix.Len(); room > 0 {
		c.prefix.Write(p[:min(room, len(p))])
	}
	c.written.Add(int64(len(p)))
	return len(p), nil
}
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return &net.UnixAddr{Net: "unix"} }
func (c *streamConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Net: "unix"} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func optionBytes(opt uint32, data []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, magicOpt)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// FuzzOptionHaggling feeds arbitrary client bytes to the handshake: it must
// end (EOF, error or transmission) without panicking, and every option it
// answers must be framed correctly.
func FuzzOptionHaggling(f *testing.F) {
	flags := []byte{0, 0, 0, 3}
	f.Add(append(append([]byte{}, flags...), optionBytes(optGo, goData("vol", infoName, infoBlockSize))...))
	f.Add(append(append([]byte{}, flags...), optionBytes(optList, nil)...))
	f.Add(append(append(append([]byte{}, flags...), optionBytes(optStructuredReply, nil)...), optionBytes(optExportName, []byte("vol"))...))
	f.Add(append(append([]byte{}, flags...), optionBytes(optInfo, []byte{0, 0, 0xff, 0xff, 0})...))
	f.Add(append(append([]byte{}, flags...), optionBytes(optAbort, nil)...))
	f.Add(append(append([]byte{}, flags...), binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, magicOpt), optGo)...))
	f.Add([]byte{0, 0, 0, 0x10})
	f.Fuzz(func(t *testing.T, in []byte) {
		sc := &streamConn{r: bytes.NewReader(in)}
		exp := testExport()
		n := negotiation{r: bufio.NewReader(sc), w: bufio.NewWriter(sc), exp: func() export { return exp }}
		_ = n.run()
		out := sc.prefix.Bytes()
		if len(out) < serverGreetLen || binary.BigEndian.Uint64(out) != magicInit {
			t.Fatalf("greeting missing: % x", out)
		}
		// Every option reply after the greeting starts with the reply magic,
		// unless an NBD_OPT_EXPORT_NAME answer (no header) came first.
		for p := out[serverGreetLen:]; len(p) >= optReplyHdrLen; {
			if binary.BigEndian.Uint64(p) != magicOptReply {
				if binary.BigEndian.Uint64(p) == exp.size {
					break // EXPORT_NAME reply
				}
				t.Fatalf("bad option reply framing: % x", p[:optReplyHdrLen])
			}
			l := int(binary.BigEndian.Uint32(p[16:20]))
			if l > maxOptionLen {
				t.Fatalf("option reply of %d bytes", l)
			}
			p = p[min(len(p), optReplyHdrLen+l):]
		}
	})
}

// FuzzDecideOption checks the replies decideOption builds for any option.
func FuzzDecideOption(f *testing.F) {
	f.Add(optGo, goData("vol", infoName, infoDescription))
	f.Add(optInfo, goData("", infoBlockSize))
	f.Add(optGo, goData("vol")[:3])
	f.Add(optExportName, []byte("vol"))
	f.Add(optList, []byte{})
	f.Add(uint32(12345), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, opt uint32, data []byte) {
		exp := testExport()
		out := decideOption(opt, data, &exp)
		for _, r := range out.replies {
			if r.typ&repFlagError != 0 && len(r.data) > maxStringBytes {
				t.Fatalf("error message of %d bytes", len(r.data))
			}
		}
		if (opt == optGo || opt == optInfo) && len(out.replies) > 0 && out.replies[0].typ == repInfo {
			last := out.replies[len(out.replies)-1]
			if last.typ != repAck || binary.BigEndian.Uint64(out.replies[0].data[2:]) != exp.size {
				t.Fatalf("GO/INFO success without ACK or export info: %+v", out.replies)
			}
			if opt == optGo && out.next != stepTransmit {
				t.Fatal("successful GO does not enter transmission")
			}
		}
		if opt == optExportName && out.next == stepTransmit && !exp.matches(string(data)) {
			t.Fatalf("EXPORT_NAME %q accepted", data)
		}
	})
}

// fuzzVolume is the volume size of FuzzRequests: small, so reads that pass the
// bounds check stay small and the fuzzer is not limited by memory.
const fuzzVolume = 64 << 10

// expectedOutput models the server: the bytes it must write in reply to the
// request stream in, per classify (the memory backend never fails in range).
func expectedOutput(in []byte) int64 {
	var want int64
	for len(in) >= requestLen {
		req, err := parseRequest((*[requestLen]byte)(in[:requestLen]))
		if err != nil || req.typ == cmdDisc {
			break
		}
		in = in[requestLen:]
		v := classify(req, fuzzVolume, 1<<20)
		if req.typ == cmdWrite {
			if uint64(len(in)) < uint64(req.length) {
				break
			}
			in = in[req.length:]
		}
		want += simpleReplyLen
		if req.typ == cmdRead && v.errno == 0 {
			want += int64(req.length)
		}
	}
	return want
}

// FuzzRequests feeds arbitrary bytes to the transmission phase: it must never
// panic, must answer every complete request exactly once with the right
// amount of data, and must stop at the first bad magic.
func FuzzRequests(f *testing.F) {
	req := func(typ, flags uint16, off uint64, length uint32, payload []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, magicRequest)
		b = binary.BigEndian.AppendUint16(b, flags)
		b = binary.BigEndian.AppendUint16(b, typ)
		b = binary.BigEndian.AppendUint64(b, 7)
		b = binary.BigEndian.AppendUint64(b, off)
		b = binary.BigEndian.AppendUint32(b, length)
		return append(b, payload...)
	}
	f.Add(req(cmdWrite, cmdFlagFUA, 512, 8, []byte("abcdefgh")))
	f.Add(append(req(cmdRead, 0, 0, 4096, nil), req(cmdFlush, 0, 0, 0, nil)...))
	f.Add(append(req(cmdWriteZeroes, cmdFlagNoHole, 0, fuzzVolume, nil), req(cmdTrim, 0, 4096, 4096, nil)...))
	f.Add(req(cmdWrite, 0, fuzzVolume-4, 8, []byte("12345678")))
	f.Add(req(cmdRead, 0, 0, 1<<20+1, nil))
	f.Add(append(req(99, 1<<15, 0, 1, nil), req(cmdDisc, 0, 0, 0, nil)...))
	f.Add(req(cmdWrite, 0, 0, 100, []byte("short")))
	f.Fuzz(func(t *testing.T, in []byte) {
		mb := newMemBackend(fuzzVolume)
		s := &Server{maxPayload: 1 << 20, backend: mb, flusher: &flusher{fn: mb.Flush}, log: quietLog()}
		s.size.Store(fuzzVolume)
		sc := &streamConn{r: bytes.NewReader(in)}
		c := &conn{srv: s, nc: sc, br: bufio.NewReaderSize(sc, 4096), log: s.log, budget: newBudget(1 << 20)}
		c.serve()
		if got, want := sc.written.Load(), expectedOutput(in); got != want {
			t.Fatalf("server wrote %d bytes, model says %d", got, want)
		}
	})
}
