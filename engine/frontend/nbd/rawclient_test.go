package nbd

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// rawClient speaks the NBD wire format byte by byte, for the protocol-error
// tests that real clients cannot provoke (bad magic, unknown commands, ...).
type rawClient struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, s *Server) *rawClient {
	t.Helper()
	network, addr := "unix", ""
	if s.ln.Addr().Network() == "tcp" {
		network = "tcp"
	}
	addr = s.ln.Addr().String()
	nc, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { _ = nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawClient) read(n int) []byte {
	c.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c.nc, b); err != nil {
		c.t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// greet reads the server greeting and sends client flags.
func (c *rawClient) greet(clientFlags uint32) {
	c.t.Helper()
	g := c.read(serverGreetLen)
	if binary.BigEndian.Uint64(g[0:8]) != magicInit || binary.BigEndian.Uint64(g[8:16]) != magicOpt {
		c.t.Fatalf("bad greeting % x", g)
	}
	if f := binary.BigEndian.Uint16(g[16:18]); f != flagFixedNewstyle|flagNoZeroes {
		c.t.Fatalf("handshake flags %#x", f)
	}
	c.write(binary.BigEndian.AppendUint32(nil, clientFlags))
}

func (c *rawClient) sendOption(opt uint32, data []byte) {
	c.t.Helper()
	b := binary.BigEndian.AppendUint64(nil, magicOpt)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	c.write(append(b, data...))
}

// optionReply reads one option reply and checks it answers opt.
func (c *rawClient) optionReply(opt uint32) (typ uint32, data []byte) {
	c.t.Helper()
	h := c.read(optReplyHdrLen)
	if binary.BigEndian.Uint64(h[0:8]) != magicOptReply || binary.BigEndian.Uint32(h[8:12]) != opt {
		c.t.Fatalf("bad option reply header % x for option %d", h, opt)
	}
	return binary.BigEndian.Uint32(h[12:16]), c.read(int(binary.BigEndian.Uint32(h[16:20])))
}

func goData(name string, infos ...uint16) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(infos)))
	for _, i := range infos {
		b = binary.BigEndian.AppendUint16(b, i)
	}
	return b
}

// negotiateGo completes the handshake with NBD_OPT_GO and returns the size and
// transmission flags from NBD_INFO_EXPORT.
func (c *rawClient) negotiateGo(name string) (size uint64, flags uint16) {
	c.t.Helper()
	c.greet(uint32(flagFixedNewstyle | flagNoZeroes))
	c.sendOption(optGo, goData(name))
	for {
		typ, data := c.optionReply(optGo)
		switch typ {
		case repAck:
			return size, flags
		case repInfo:
			if binary.BigEndian.Uint16(data) == infoExport {
				size, flags = binary.BigEndian.Uint64(data[2:10]), binary.BigEndian.Uint16(data[10:12])
			}
		default:
			c.t.Fatalf("NBD_OPT_GO: reply type %#x: %s", typ, data)
		}
	}
}

func (c *rawClient) request(typ, flags uint16, handle, offset uint64, length uint32, payload []byte) {
	c.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, magicRequest)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint64(b, handle)
	b = binary.BigEndian.AppendUint64(b, offset)
	b = binary.BigEndian.AppendUint32(b, length)
	c.write(append(b, payload...))
}

// reply reads one simple reply header and returns its error and handle.
func (c *rawClient) reply() (errno uint32, handle uint64) {
	c.t.Helper()
	h := c.read(simpleReplyLen)
	if binary.BigEndian.Uint32(h[0:4]) != magicSimpleReply {
		c.t.Fatalf("bad reply magic % x", h)
	}
	return binary.BigEndian.Uint32(h[4:8]), binary.BigEndian.Uint64(h[8:16])
}

// expectClosed asserts the server closed the connection (EOF or reset).
func (c *rawClient) expectClosed() {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	_, err := c.nc.Read(b[:])
	if err == nil {
		c.t.Fatal("connection still open, want closed")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection still open after 10 s, want closed")
	}
}
