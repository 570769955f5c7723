package dataconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/shm"
)

// Shared memory on local connections (see the package comment): the engine
// passes two regions to the replica. The write region is the engine's I/O
// arena (shm.Arena), where its frontends keep request payloads: a write whose
// payload lies there goes as a reference, and the replica copies it into its
// file straight from the mapping. The read region belongs to one Client; a
// read borrows a block of it, the replica reads its file into the block, and
// the engine copies the block into the caller's buffer.
//
// Why the read region is per Client and not the arena: a replica that timed
// out may still write into its block later. Its blocks are never handed out
// again (the failed Client is dropped with its region), so a late write cannot
// land in a buffer that now holds other data.

const (
	// readRegionSize is the size of a Client's read region (bytes): room for
	// 64 reads of 128 KiB in flight; a read that finds no free block goes
	// over the socket.
	readRegionSize = 8 << 20
	attachPayload  = 16
	attachTimeout  = 5 * time.Second
)

// attachShm offers the regions (both non-nil) on a fresh local connection and
// reports whether the replica took them. A replica that refused them answered
// Error; the connection is then used without them. Errors are connection
// failures.
func attachShm(nc net.Conn, w, r *shm.Region) (bool, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return false, nil
	}
	var msg [HeaderSize + attachPayload]byte
	h := Header{Type: TypeShmAttach, DataLen: attachPayload}
	h.Encode(msg[:])
	binary.LittleEndian.PutUint64(msg[HeaderSize:], uint64(w.Size()))
	binary.LittleEndian.PutUint64(msg[HeaderSize+8:], uint64(r.Size()))
	_ = uc.SetDeadline(time.Now().Add(attachTimeout))
	defer uc.SetDeadline(time.Time{})
	n, _, err := uc.WriteMsgUnix(msg[:], unix.UnixRights(w.Fd(), r.Fd()), nil)
	if err == nil && n < len(msg) {
		_, err = uc.Write(msg[n:])
	}
	if err != nil {
		return false, fmt.Errorf("dataconn: offer shared memory: %w", err)
	}
	var resp [HeaderSize]byte
	if _, err := io.ReadFull(uc, resp[:]); err != nil {
		return false, fmt.Errorf("dataconn: offer shared memory: %w", err)
	}
	rh, err := DecodeHeader(resp[:])
	if err != nil {
		return false, err
	}
	switch rh.Type {
	case TypeResponse:
		if rh.DataLen != 0 {
			return false, fmt.Errorf("%w: %d payload bytes in answer to ShmAttach", ErrProtocol, rh.DataLen)
		}
		return true, nil
	case TypeError:
		_, err := io.CopyN(io.Discard, uc, int64(rh.DataLen))
		return false, err
	default:
		return false, fmt.Errorf("%w: %v in answer to ShmAttach", ErrProtocol, rh.Type)
	}
}

// acceptShm reads the first header of a local connection with its ancillary
// data. When it is ShmAttach it maps the regions (answering Response, or
// Error when they are unusable) and returns no prefix; otherwise it returns
// the header bytes, which the caller serves as the start of the stream. Any
// file descriptors received are closed before it returns.
func (c *serverConn) acceptShm(uc *net.UnixConn) ([]byte, error) {
	hdr, fds, err := readFirstHeader(uc)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if err != nil {
		return nil, err
	}
	h, err := DecodeHeader(hdr)
	if err == nil && h.Type == TypeReadView {
		if err := c.serveView(uc, &h); err != nil {
			return nil, err
		}
		return nil, errViewServed
	}
	if err != nil || h.Type != TypeShmAttach {
		return hdr, nil // the request loop reports a bad header
	}
	if h.DataLen != attachPayload {
		return nil, fmt.Errorf("%w: ShmAttach with %d payload bytes, want %d", ErrProtocol, h.DataLen, attachPayload)
	}
	var sizes [attachPayload]byte
	if _, err := io.ReadFull(uc, sizes[:]); err != nil {
		return nil, err
	}
	if err := c.mapRegions(fds, binary.LittleEndian.Uint64(sizes[:]), binary.LittleEndian.Uint64(sizes[8:])); err != nil {
		c.respondErr(&h, err)
	} else {
		c.respond(&h, TypeResponse, 0, nil)
	}
	return nil, c.flush()
}

// readFirstHeader reads HeaderSize bytes, the first read with room for two
// SCM_RIGHTS descriptors.
func readFirstHeader(uc *net.UnixConn) ([]byte, []int, error) {
	hdr := make([]byte, HeaderSize)
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(hdr, oob)
	// On a failed recvmsg the counts can be -1: never slice with them.
	n, oobn = max(n, 0), max(oobn, 0)
	fds := parseRights(oob[:oobn])
	if err != nil {
		return nil, fds, err
	}
	if _, err := io.ReadFull(uc, hdr[n:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fds, err
	}
	return hdr, fds, nil
}

// parseRights returns the descriptors in SCM_RIGHTS messages of oob.
func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// mapRegions maps the write region read-only and the read region read-write
// after checking that they are what the engine announced.
func (c *serverConn) mapRegions(fds []int, wsize, rsize uint64) error {
	if len(fds) != 2 {
		return fmt.Errorf("ShmAttach: %d descriptors, want 2", len(fds))
	}
	w, err := shm.Map(fds[0], false)
	if err != nil {
		return fmt.Errorf("ShmAttach: write region: %w", err)
	}
	r, err := shm.Map(fds[1], true)
	if err != nil {
		w.Close()
		return fmt.Errorf("ShmAttach: read region: %w", err)
	}
	if uint64(w.Size()) != wsize || uint64(r.Size()) != rsize {
		w.Close()
		r.Close()
		return fmt.Errorf("ShmAttach: regions of %d and %d bytes, announced %d and %d", w.Size(), r.Size(), wsize, rsize)
	}
	c.wregion, c.rregion = w, r
	return nil
}

// handleShm serves ShmWrite and ShmRead. A reference outside the region, or
// either request on a connection without regions, is a protocol error.
func (c *serverConn) handleShm(h *Header) error {
	var ref [shmRefSize]byte
	if _, err := io.ReadFull(c.br, ref[:]); err != nil {
		return err
	}
	region := c.wregion
	if h.Type == TypeShmRead {
		region = c.rregion
	}
	if region == nil {
		return fmt.Errorf("%w: %v on a connection without shared memory", ErrProtocol, h.Type)
	}
	p, err := region.Slice(int64(binary.LittleEndian.Uint64(ref[:])), h.Size)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if h.Type == TypeShmWrite {
		n, err := c.h.WriteAt(p, h.Offset)
		c.respondResult(h, n, err)
		return nil
	}
	n, err := c.h.ReadAt(p, h.Offset)
	c.respondRead(h, n, err, nil)
	return nil
}

// closeShm unmaps the regions; the connection's requests are all done.
func (c *serverConn) closeShm() {
	c.wregion.Close()
	c.rregion.Close()
	c.wregion, c.rregion = nil, nil
}

// shmRef turns op into ShmWrite or ShmRead when its data can go through
// shared memory: a write whose payload lies in the write region, a read for
// which the read region has a free block. It updates h and returns the bytes
// to send for the header (with the reference appended when used).
func (c *Client) shmRef(op *Op, h *Header) []byte {
	var ref int64
	switch op.typ {
	case TypeWrite:
		off, ok := c.wregion.Offset(op.buf)
		if !ok {
			return op.hdr[:HeaderSize]
		}
		h.Type, ref = TypeShmWrite, off
	case TypeRead:
		slot := c.rregion.Get(len(op.buf))
		if slot == nil {
			return op.hdr[:HeaderSize]
		}
		op.slot = slot
		ref, _ = c.rregion.Offset(slot)
		h.Type = TypeShmRead
	default:
		return op.hdr[:HeaderSize]
	}
	h.DataLen = shmRefSize
	binary.LittleEndian.PutUint64(op.hdr[HeaderSize:], uint64(ref))
	return op.hdr[:HeaderSize+shmRefSize]
}

// fromSlot completes a ShmRead answered with n bytes (Response: n = the
// whole read; EOF: n = h.Size): it copies them from the block to the caller's
// buffer and frees the block.
func (op *Op) fromSlot(h *Header, n int) (int, error) {
	if h.DataLen != 0 || n > len(op.buf) || (h.Type == TypeResponse && int(h.Size) != len(op.buf)) {
		return 0, fmt.Errorf("%w: %v of %d bytes with %d payload bytes in answer to ShmRead of %d",
			ErrProtocol, h.Type, h.Size, h.DataLen, len(op.buf))
	}
	copy(op.buf[:n], op.slot)
	op.freeSlot()
	return n, nil
}

// freeSlot returns op's read block to its Client's read region once the
// replica answered (it no longer writes into it). A request that got no
// answer keeps its block out of use.
func (op *Op) freeSlot() {
	if op.slot != nil {
		op.cc.c.rregion.Put(op.slot)
		op.slot = nil
	}
}
