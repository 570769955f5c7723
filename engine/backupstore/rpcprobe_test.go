package backupstore

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// serveOnce accepts one connection on a loopback port and answers what
// reply(call) returns; it returns the port.
func serveOnce(t *testing.T, reply func(call []byte) []byte) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		call := make([]byte, 44)
		if _, err := io.ReadFull(c, call); err != nil {
			return
		}
		_, _ = c.Write(reply(call))
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// An HTTP server (what this VM's default route answers with) is refused
// before the NFS library would allocate the 1.2 GB its reply's first bytes
// name; an RPC server's reply, even a denial, passes.
func TestProbeRPC(t *testing.T) {
	httpPort := serveOnce(t, func([]byte) []byte { return []byte("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n") })
	err := probeRPC("127.0.0.1", httpPort, portmapperProg, portmapperVers)
	if err == nil || !strings.Contains(err.Error(), "not an ONC RPC server") || !strings.Contains(err.Error(), "1213486160") {
		t.Fatalf("HTTP peer: %v", err)
	}
	rpcPort := serveOnce(t, func(call []byte) []byte {
		r := make([]byte, 4+24)
		binary.BigEndian.PutUint32(r, 0x80000000|24)
		copy(r[4:8], call[4:8])               // xid
		binary.BigEndian.PutUint32(r[8:], 1)  // REPLY
		binary.BigEndian.PutUint32(r[12:], 1) // MSG_DENIED: still an RPC server
		return r
	})
	if err := probeRPC("127.0.0.1", rpcPort, 100005, 3); err != nil {
		t.Fatalf("RPC peer: %v", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if err := probeRPC("127.0.0.1", closed, 100005, 3); err == nil {
		t.Fatalf("closed port %s: no error", strconv.Itoa(closed))
	}
}

func TestNullCall(t *testing.T) {
	b := nullCall(7, 100003, 3)
	if len(b) != 44 || binary.BigEndian.Uint32(b) != 0x80000000|40 || binary.BigEndian.Uint32(b[4:]) != 7 ||
		binary.BigEndian.Uint32(b[16:]) != 100003 || binary.BigEndian.Uint32(b[20:]) != 3 {
		t.Fatalf("NULL call % x", b)
	}
}

// FuzzCheckReplyHeader: any 12 bytes from a peer give an answer, never a
// panic, and an accepted header names a fragment within the limit.
func FuzzCheckReplyHeader(f *testing.F) {
	f.Add([]byte("HTTP/1.1 400 Bad"), uint32(1))
	f.Add([]byte{0x80, 0, 0, 24, 0, 0, 0, 1, 0, 0, 0, 1}, uint32(1))
	f.Fuzz(func(t *testing.T, h []byte, xid uint32) {
		if checkReplyHeader(h, xid) == nil {
			if n := binary.BigEndian.Uint32(h) & 0x7fffffff; n > maxRPCRecord {
				t.Fatalf("accepted a %d-byte fragment", n)
			}
		}
	})
}
