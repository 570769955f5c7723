package backupstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// maxRPCRecord bounds the reply record a probe accepts (1 MiB). The NFS
// client library allocates whatever length a peer's record mark names, so
// a peer that is not an RPC server (an HTTP proxy answering "HTTP/1.1 400",
// read as a 1.2 GB fragment) must be refused before the library dials it.
const maxRPCRecord = 1 << 20

// probeTimeout bounds one probe: connect, NULL call, reply header.
const probeTimeout = 5 * time.Second

// portmapperPort and portmapperProg are the portmapper's well-known TCP
// port and program number (RFC 1833).
const (
	portmapperPort = 111
	portmapperProg = 100000
	portmapperVers = 2
)

// nullCall returns the record (mark included) of an ONC RPC NULL call
// (procedure 0, AUTH_NONE credential and verifier) of prog/vers with xid
// (RFC 5531 sections 9 and 11): 4-byte mark, then ten 4-byte words.
func nullCall(xid, prog, vers uint32) []byte {
	words := []uint32{xid, 0 /* CALL */, 2 /* rpcvers */, prog, vers, 0 /* NULL */, 0, 0, 0, 0}
	b := make([]byte, 4+4*len(words))
	binary.BigEndian.PutUint32(b, 0x80000000|uint32(4*len(words)))
	for i, w := range words {
		binary.BigEndian.PutUint32(b[4+4*i:], w)
	}
	return b
}

// checkReplyHeader checks the first 12 bytes of a reply (record mark, xid,
// msg_type) to a call with xid: a fragment of 8 to maxRPCRecord bytes, the
// same xid, msg_type REPLY (1). Errors name the field and the limit.
func checkReplyHeader(h []byte, xid uint32) error {
	if len(h) < 12 {
		return fmt.Errorf("reply header: %d bytes, want 12", len(h))
	}
	mark := binary.BigEndian.Uint32(h)
	if n := mark & 0x7fffffff; n < 8 || n > maxRPCRecord {
		return fmt.Errorf("record mark: a fragment of %d bytes (limit 8-%d; the peer sent %q)", n, maxRPCRecord, printable(h))
	}
	if got := binary.BigEndian.Uint32(h[4:]); got != xid {
		return fmt.Errorf("reply xid %#x, want %#x", got, xid)
	}
	if mt := binary.BigEndian.Uint32(h[8:]); mt != 1 {
		return fmt.Errorf("msg_type %d, want 1 (REPLY)", mt)
	}
	return nil
}

// printable is b with bytes outside printable ASCII as '.'.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

// probeRPC connects to host:port, sends a NULL call of prog/vers and checks
// the reply's header (checkReplyHeader); any reply status (accepted,
// denied, program unavailable) shows an RPC server. Errors say what the
// peer is not; bounded by probeTimeout.
func probeRPC(host string, port int, prog, vers uint32) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	xid := uint32(time.Now().UnixNano())
	if _, err := conn.Write(nullCall(xid, prog, vers)); err != nil {
		return fmt.Errorf("%s: NULL call: %w", addr, err)
	}
	h := make([]byte, 12)
	if _, err := io.ReadFull(conn, h); err != nil {
		return fmt.Errorf("%s: NULL call reply: %w", addr, err)
	}
	if err := checkReplyHeader(h, xid); err != nil {
		return fmt.Errorf("%s is not an ONC RPC server (program %d): %w", addr, prog, err)
	}
	return nil
}
