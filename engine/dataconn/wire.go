// Package dataconn is the data path between the engine controller and a replica:
// Longhorn's dataconn framing (longhorn-engine pkg/dataconn/{types,wire}.go) over
// TCP or a unix socket, with requests multiplexed by sequence number over several
// connections per replica.
//
// Every message is a 26-byte little-endian header followed by DataLen payload
// bytes:
//
//	offset size field
//	0      2    MagicVersion = 0x1b01
//	2      4    Seq          (u32, echoed in the response)
//	6      4    Type         (u32, see MsgType)
//	10     8    Offset       (i64, bytes into the volume)
//	18     4    Size         (u32, request length; in a response, bytes done)
//	22     4    DataLen      (u32, payload length)
//
// Requests: Read (Size = length, no payload; answered by Response with the
// data), Write (payload = data, Size = len(data); answered by Response with
// Size = bytes written and no payload), Unmap (Size = length), Ping, Close.
// Errors come back as Error (payload = message; a full disk says "no space
// left on device" in it, as Longhorn's replica does) or, from Longhorn's
// engine socket frontend, ENOSPC. Flush (type 9) is an extension of this
// implementation: it asks the replica to make every write it acknowledged
// durable. Longhorn's replica drops it without an answer, so a client sends
// it only to replicas that listed ExtensionFlush (Options.Flush).
//
// Shared memory (this implementation's extension, local connections only, to
// replicas that listed ExtensionShm): an engine that reached the replica over
// its unix socket (LocalName) may open
// the connection with ShmAttach (DataLen 16: two u64 region sizes, the write
// region's and the read region's), passing the two sealed memfds (package
// shm) as SCM_RIGHTS; the replica answers Response, or Error and serves the
// connection without them. Afterwards ShmWrite (Size = length, DataLen 8: the
// u64 offset of the data in the write region, which the replica maps
// read-only) and ShmRead (the same, into the read region) stand for Write and
// Read; their answers carry no payload (a ShmRead's Response or EOF has Size
// = bytes read into the region). Over TCP they are protocol errors.
//
// Direct reads (ReadView, replicas that listed ExtensionDirectRead): see
// direct.go.
package dataconn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MagicVersion opens every header ("LongHorn01").
const MagicVersion uint16 = 0x1b01

// HeaderSize is the size of the fixed header in bytes.
const HeaderSize = 26

// MaxDataLen is the largest payload (and the largest Read/Unmap Size) either
// side accepts: 32 MiB. A larger DataLen is a protocol error, so a hostile peer
// cannot make a decoder allocate more than this per message.
const MaxDataLen = 32 << 20

// maxErrorText caps how much of an Error payload is kept as the message.
const maxErrorText = 4096

// MsgType is the Type field of a header (Longhorn's TypeRead ... TypeENOSPC).
type MsgType uint32

// Message types. The numeric values are Longhorn's; TypeFlush is ours.
const (
	TypeRead MsgType = iota
	TypeWrite
	TypeResponse
	TypeError
	TypeEOF
	TypeClose
	TypePing
	TypeUnmap
	TypeENOSPC
	TypeFlush
	TypeShmAttach
	TypeShmWrite
	TypeShmRead
	TypeReadView
	typeEnd
)

// shmRefSize is the payload of ShmWrite and ShmRead: the u64 region offset.
const shmRefSize = 8

var typeNames = [...]string{"Read", "Write", "Response", "Error", "EOF", "Close", "Ping", "Unmap", "ENOSPC", "Flush",
	"ShmAttach", "ShmWrite", "ShmRead", "ReadView"}

func (t MsgType) String() string {
	if t < typeEnd {
		return typeNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint32(t))
}

// Header is one decoded message header.
type Header struct {
	Seq     uint32
	Type    MsgType
	Offset  int64
	Size    uint32
	DataLen uint32
}

// Protocol errors. A connection that sees one is closed.
var (
	// ErrBadMagic means the first two bytes were not 0x1b01.
	ErrBadMagic = errors.New("dataconn: bad magic version")
	// ErrBadType means the Type field is not a known message type.
	ErrBadType = errors.New("dataconn: unknown message type")
	// ErrTooLarge means DataLen (or a Read/Unmap Size) exceeds MaxDataLen.
	ErrTooLarge = errors.New("dataconn: message larger than MaxDataLen")
	// ErrProtocol is a message that is well-formed but not allowed where it came
	// (unknown sequence number, wrong payload length for the request).
	ErrProtocol = errors.New("dataconn: protocol violation")
)

// Encode writes h into b (at least HeaderSize bytes) with the magic prefix.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint16(b[0:], MagicVersion)
	binary.LittleEndian.PutUint32(b[2:], h.Seq)
	binary.LittleEndian.PutUint32(b[6:], uint32(h.Type))
	binary.LittleEndian.PutUint64(b[10:], uint64(h.Offset))
	binary.LittleEndian.PutUint32(b[18:], h.Size)
	binary.LittleEndian.PutUint32(b[22:], h.DataLen)
}

// DecodeHeader parses the first HeaderSize bytes of b. It checks the magic, the
// type and that DataLen <= MaxDataLen; it does not judge whether the message
// makes sense for the receiver (see Header.ValidRequest).
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, io.ErrUnexpectedEOF
	}
	if m := binary.LittleEndian.Uint16(b[0:]); m != MagicVersion {
		return Header{}, fmt.Errorf("%w: 0x%04x", ErrBadMagic, m)
	}
	h := Header{
		Seq:     binary.LittleEndian.Uint32(b[2:]),
		Type:    MsgType(binary.LittleEndian.Uint32(b[6:])),
		Offset:  int64(binary.LittleEndian.Uint64(b[10:])),
		Size:    binary.LittleEndian.Uint32(b[18:]),
		DataLen: binary.LittleEndian.Uint32(b[22:]),
	}
	if h.Type >= typeEnd {
		return Header{}, fmt.Errorf("%w: %d", ErrBadType, uint32(h.Type))
	}
	if h.DataLen > MaxDataLen {
		return Header{}, fmt.Errorf("%w: data length %d > %d", ErrTooLarge, h.DataLen, MaxDataLen)
	}
	return h, nil
}

// ValidRequest reports whether h is acceptable as a request to a replica:
// a known request type, a non-negative offset, Read/Unmap sizes within
// MaxDataLen and without payload, Write with a payload, ShmWrite and ShmRead
// with their 8-byte reference. ShmAttach is valid only as the first message of
// a local connection, which the server reads apart, so it is refused here.
func (h *Header) ValidRequest() error {
	switch h.Type {
	case TypeRead, TypeUnmap:
		if h.DataLen != 0 {
			return fmt.Errorf("%w: %v request with %d payload bytes", ErrProtocol, h.Type, h.DataLen)
		}
		if h.Size > MaxDataLen {
			return fmt.Errorf("%w: %v size %d > %d", ErrTooLarge, h.Type, h.Size, MaxDataLen)
		}
	case TypeWrite:
	case TypeShmWrite, TypeShmRead:
		if h.DataLen != shmRefSize {
			return fmt.Errorf("%w: %v request with %d payload bytes, want %d", ErrProtocol, h.Type, h.DataLen, shmRefSize)
		}
		if h.Size > MaxDataLen {
			return fmt.Errorf("%w: %v size %d > %d", ErrTooLarge, h.Type, h.Size, MaxDataLen)
		}
	case TypePing, TypeClose, TypeFlush:
		if h.DataLen != 0 {
			return fmt.Errorf("%w: %v request with %d payload bytes", ErrProtocol, h.Type, h.DataLen)
		}
		return nil
	default:
		return fmt.Errorf("%w: %v is not a request", ErrProtocol, h.Type)
	}
	if h.Offset < 0 {
		return fmt.Errorf("%w: negative offset %d", ErrProtocol, h.Offset)
	}
	return nil
}

// readHeader reads and decodes one header from r, whose buffer must hold at
// least HeaderSize bytes (every reader in this package has 64 KiB or more).
// A clean end of stream before the first byte is io.EOF.
func readHeader(r *bufio.Reader) (Header, error) {
	b, err := r.Peek(HeaderSize)
	if err != nil {
		if errors.Is(err, io.EOF) && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Header{}, err
	}
	h, err := DecodeHeader(b)
	if err != nil {
		return Header{}, err
	}
	_, _ = r.Discard(HeaderSize)
	return h, nil
}

// bufferedMessage reports whether r already holds a whole message (header and
// payload), so that reading it will not block.
func bufferedMessage(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < HeaderSize {
		return false
	}
	b, _ := r.Peek(HeaderSize)
	return uint64(n) >= HeaderSize+uint64(binary.LittleEndian.Uint32(b[22:]))
}

// readErrorText reads an n-byte error payload and returns at most maxErrorText
// bytes of it as a string, discarding the rest.
func readErrorText(r *bufio.Reader, n uint32) (string, error) {
	keep := n
	if keep > maxErrorText {
		keep = maxErrorText
	}
	var buf [maxErrorText]byte
	if _, err := io.ReadFull(r, buf[:keep]); err != nil {
		return "", err
	}
	if _, err := r.Discard(int(n - keep)); err != nil {
		return "", err
	}
	return string(buf[:keep]), nil
}
