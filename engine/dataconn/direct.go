package dataconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/rawio"
	"github.com/longhorn-go/longhorn/engine/shm"
)

// Direct local reads (this implementation's extension, ExtensionDirectRead):
// an engine on the replica's node reads the replica's layer files itself,
// which saves the round trip through the replica process (at queue depth 1 a
// read crosses two processes instead of three).
//
// The replica hands out a read view on request: ReadView as the first and
// only message of a fresh connection to its local socket, answered by
// Response with viewPayload bytes
//
//	offset size field
//	0      8    Seq      (u64, even: the store's sequence number the view is valid at)
//	8      8    Sectors  (u64, 4096-byte sectors of the index)
//	16     4    Layers   (u32, 1..MaxViewLayers)
//	20     4    Slot     (u32: 0 = no direct writes, else write slot Slot-1)
//
// and 2+Layers descriptors as SCM_RIGHTS: the sequence region (a u64 at
// offset 0; the write slots, u64 counters, at WriteSlotOffset + 8*slot), the
// location index region (one byte per sector naming the layer that holds
// it, 0 = zeroes, packed in little-endian u64 words; after the
// ceil(Sectors/8) words, one bit per 512 words (a page of the index) that
// is set once anything in that page was set, in ceil(pages/64) u64 words),
// and the layer files, oldest first, the head last. Both regions are sealed
// memfds. A replica that cannot give one answers Error; the connection
// closes after the answer. Without a slot the replica closes the connection
// after the answer; with one it keeps it open, and the slot stays the
// engine's until the engine closes it (after its last direct write with the
// view; the kernel closes it when the engine dies).
//
// Direct writes (with a slot; the replica's side and why it is safe: engine/
// replica view.go): add 1 to the slot, check the sequence number is the
// view's, pwrite the head in 64 KiB-aligned pieces, set the sectors' index
// bytes to the head's layer number (len(Layers)) and their page bits,
// subtract 1. A write whose check fails goes to the replica as usual.
//
// Coherence is the replica's part (engine/replica view.go): the sequence
// number moves whenever the store changes its layers, index or files in a
// way its shared-lock readers must not see, and a direct read whose view's
// number is not the current one, before or after reading, is discarded: the
// read then goes to the replica as usual, and a new view is fetched in the
// background.

const (
	viewPayload = 24
	// MaxViewLayers is the most layers a view may carry (with the two
	// regions, within the kernel's 253 descriptors per message).
	MaxViewLayers = 250
	// viewRetry is how long a client waits before asking again after a
	// failed view request; it doubles with each further failure in a row,
	// up to 32 s.
	viewRetry = time.Second
	// maxViewSectors bounds Sectors (a 64 TiB volume).
	maxViewSectors = 64 << 40 >> 12
	// WriteSlotOffset and MaxWriteSlots place the write slots in the
	// sequence region (the replica's values).
	WriteSlotOffset = 64
	MaxWriteSlots   = 32
	// writeChunk is the most one pwrite of a direct write covers, at
	// offsets aligned to it (the replica's writeChunk, for the same reason:
	// the page cache's folio sizes).
	writeChunk = 64 << 10
)

// ViewFiles is a read view as a Handler gives it (descriptors it owns;
// the server closes them once sent). With Writable the view comes with
// direct write slot WriteSlot (0..MaxWriteSlots-1); Release, when not nil,
// is called once the engine closed the view's connection (or the view was
// not sent).
type ViewFiles struct {
	Seq       uint64
	Sectors   int64
	SeqFd     int
	IndexFd   int
	Layers    []int
	Writable  bool
	WriteSlot int
	Release   func()
}

// ViewHandler is implemented by a Handler that offers direct reads.
// ReadView returns a fresh view or an error (sent as Error).
type ViewHandler interface {
	ReadView() (ViewFiles, error)
}

// viewInfo is a decoded ReadView answer.
type viewInfo struct {
	seq     uint64
	sectors int64
	layers  int
	slot    int // -1: no direct writes
}

// decodeView checks a ReadView answer's header, payload and descriptor count.
func decodeView(h Header, payload []byte, nfds int) (viewInfo, error) {
	if h.Type != TypeResponse {
		return viewInfo{}, fmt.Errorf("%w: %v in answer to ReadView", ErrProtocol, h.Type)
	}
	if h.DataLen != viewPayload || len(payload) != viewPayload {
		return viewInfo{}, fmt.Errorf("%w: ReadView answer with %d payload bytes, want %d", ErrProtocol, h.DataLen, viewPayload)
	}
	v := viewInfo{seq: binary.LittleEndian.Uint64(payload), layers: int(binary.LittleEndian.Uint32(payload[16:]))}
	sectors := binary.LittleEndian.Uint64(payload[8:])
	slot := binary.LittleEndian.Uint32(payload[20:])
	v.slot = int(slot) - 1
	switch {
	case slot > MaxWriteSlots || (slot > 0 && v.layers > 255):
		return viewInfo{}, fmt.Errorf("%w: ReadView write slot %d with %d layers, want 0..%d and at most 255 layers", ErrProtocol, slot, v.layers, MaxWriteSlots)
	case v.seq%2 != 0:
		return viewInfo{}, fmt.Errorf("%w: ReadView sequence %d is odd", ErrProtocol, v.seq)
	case sectors == 0 || sectors > maxViewSectors:
		return viewInfo{}, fmt.Errorf("%w: ReadView of %d sectors, want 1..%d", ErrProtocol, sectors, uint64(maxViewSectors))
	case v.layers < 1 || v.layers > MaxViewLayers:
		return viewInfo{}, fmt.Errorf("%w: ReadView with %d layers, want 1..%d", ErrProtocol, v.layers, MaxViewLayers)
	case nfds != v.layers+2:
		return viewInfo{}, fmt.Errorf("%w: ReadView with %d descriptors for %d layers, want %d", ErrProtocol, nfds, v.layers, v.layers+2)
	}
	v.sectors = int64(sectors)
	return v, nil
}

// serveView answers a ReadView request h on uc (the connection then ends).
func (c *serverConn) serveView(uc *net.UnixConn, h *Header) error {
	if h.DataLen != 0 {
		return fmt.Errorf("%w: ReadView with %d payload bytes", ErrProtocol, h.DataLen)
	}
	vh, ok := c.h.(ViewHandler)
	if !ok {
		c.respondErr(h, errors.New("direct reads not served"))
		return c.flush()
	}
	v, err := vh.ReadView()
	if err != nil {
		c.respondErr(h, err)
		return c.flush()
	}
	if v.Release != nil {
		defer v.Release()
	}
	slot := uint32(0) // the wire's slot+1, 0 = none
	if v.Writable && v.WriteSlot >= 0 && v.WriteSlot < MaxWriteSlots && len(v.Layers) <= 255 {
		slot = uint32(v.WriteSlot) + 1
	}
	fds := append([]int{v.SeqFd, v.IndexFd}, v.Layers...)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var msg [HeaderSize + viewPayload]byte
	r := Header{Seq: h.Seq, Type: TypeResponse, DataLen: viewPayload}
	r.Encode(msg[:])
	binary.LittleEndian.PutUint64(msg[HeaderSize:], v.Seq)
	binary.LittleEndian.PutUint64(msg[HeaderSize+8:], uint64(v.Sectors))
	binary.LittleEndian.PutUint32(msg[HeaderSize+16:], uint32(len(v.Layers)))
	binary.LittleEndian.PutUint32(msg[HeaderSize+20:], slot)
	n, _, err := uc.WriteMsgUnix(msg[:], unix.UnixRights(fds...), nil)
	if err == nil && n < len(msg) {
		_, err = uc.Write(msg[n:])
	}
	if err != nil || slot == 0 {
		return err
	}
	// The slot is the engine's while this connection is open (it sends
	// nothing more; anything it sends is ignored).
	_, _ = io.Copy(io.Discard, uc)
	return nil
}

// errViewServed ends a connection that carried a ReadView.
var errViewServed = errors.New("dataconn: read view served")

// view is a mapped read view (see the top of this file). It is reference
// counted: the Client holds one reference while the view is current, each
// direct read one while it runs; the last release unmaps and closes.
type view struct {
	refs  atomic.Int64
	info  viewInfo
	seqR  *shm.Region
	idxR  *shm.Region
	seq   *atomic.Uint64
	words []atomic.Uint64
	files []*os.File
	stale atomic.Bool
	// With a write slot (nil otherwise): the slot's counter, the index's
	// page bits, and the view's connection, which holds the slot.
	slot    *atomic.Int64
	touched []atomic.Uint64
	conn    net.Conn
}

// fetchView asks the replica at tcpAddr (its local socket) for a view and
// maps it.
func fetchView(ctx context.Context, tcpAddr string) (*view, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", LocalName(tcpAddr))
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			nc.Close()
		}
	}()
	uc := nc.(*net.UnixConn)
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	var req [HeaderSize]byte
	(&Header{Type: TypeReadView}).Encode(req[:])
	if _, err := uc.Write(req[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, HeaderSize+viewPayload)
	oob := make([]byte, unix.CmsgSpace(4*(MaxViewLayers+2)))
	n, oobn, _, _, err := uc.ReadMsgUnix(msg, oob)
	n, oobn = max(n, 0), max(oobn, 0)
	fds := parseRights(oob[:oobn])
	v, err := mapView(uc, msg, n, fds, err)
	if err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, err
	}
	if v.slot != nil {
		_ = uc.SetDeadline(time.Time{})
		v.conn, keep = uc, true
	}
	return v, nil
}

// mapView finishes reading the answer (n bytes of msg are in, with fds) and
// maps it. It takes over fds on success.
func mapView(uc *net.UnixConn, msg []byte, n int, fds []int, rerr error) (*view, error) {
	if rerr != nil {
		return nil, rerr
	}
	if n < HeaderSize {
		if _, err := io.ReadFull(uc, msg[n:HeaderSize]); err != nil {
			return nil, err
		}
		n = HeaderSize
	}
	h, err := DecodeHeader(msg)
	if err != nil {
		return nil, err
	}
	if h.Type == TypeError {
		text := make([]byte, min(h.DataLen, maxErrorText)) // the rest is dropped with the connection
		k := copy(text, msg[HeaderSize:n])
		if _, err := io.ReadFull(uc, text[k:]); err != nil {
			return nil, err
		}
		return nil, &RemoteError{Msg: string(text)}
	}
	if h.DataLen == viewPayload && n < len(msg) {
		if _, err := io.ReadFull(uc, msg[n:]); err != nil {
			return nil, err
		}
		n = len(msg)
	}
	info, err := decodeView(h, msg[HeaderSize:n], len(fds))
	if err != nil {
		return nil, err
	}
	return newView(info, fds)
}

// newView maps the regions of fds (closing their descriptors) and keeps the
// layer descriptors as files.
func newView(info viewInfo, fds []int) (*view, error) {
	writable := info.slot >= 0
	seqR, err := shm.Map(fds[0], writable)
	if err != nil {
		return nil, fmt.Errorf("read view: sequence region: %w", err)
	}
	idxR, err := shm.Map(fds[1], writable)
	if err != nil {
		seqR.Close()
		return nil, fmt.Errorf("read view: index region: %w", err)
	}
	words := (info.sectors + 7) / 8
	tw := int64(0) // the page bits, used by direct writes only
	if writable {
		tw = ((words+511)/512 + 63) / 64
	}
	seqMem, err1 := seqR.Slice(0, WriteSlotOffset+8*MaxWriteSlots)
	idxMem, err2 := idxR.Slice(0, uint32(min((words+tw)*8, shm.MaxMapSize)))
	if err := errors.Join(err1, err2); err != nil || (words+tw)*8 > shm.MaxMapSize {
		seqR.Close()
		idxR.Close()
		return nil, fmt.Errorf("read view: regions of %d and %d bytes for %d sectors", seqR.Size(), idxR.Size(), info.sectors)
	}
	for _, fd := range fds[2:] {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			seqR.Close()
			idxR.Close()
			return nil, fmt.Errorf("read view: a layer descriptor is not a regular file")
		}
	}
	unix.Close(fds[0])
	unix.Close(fds[1])
	all := unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(idxMem))), words+tw)
	v := &view{info: info, seqR: seqR, idxR: idxR,
		seq:   (*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(seqMem))),
		words: all[:words:words]}
	if writable {
		v.slot = (*atomic.Int64)(unsafe.Pointer(&seqMem[WriteSlotOffset+8*info.slot]))
		v.touched = all[words:]
	}
	for _, fd := range fds[2:] {
		v.files = append(v.files, os.NewFile(uintptr(fd), "replica-layer"))
	}
	v.refs.Store(1)
	return v, nil
}

func (v *view) acquire() bool {
	for {
		n := v.refs.Load()
		if n <= 0 {
			return false
		}
		if v.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (v *view) release() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, f := range v.files {
		f.Close()
	}
	v.seqR.Close()
	v.idxR.Close()
	if v.conn != nil {
		v.conn.Close() // gives the write slot back; no write of ours is in progress
	}
}

func (v *view) layer(s int64) uint8 {
	return uint8(v.words[s/8].Load() >> (8 * uint(s%8)))
}

// read fills p (4096-aligned, as off) from the layer files. ok is false when
// the result must not be used: the view is stale (marked), the range is
// outside it, a layer is unknown, or a file read failed (the replica then
// answers, with its own error if it has one).
func (v *view) read(p []byte, off int64) bool {
	if v.seq.Load() != v.info.seq {
		v.stale.Store(true)
		return false
	}
	first := off / 4096
	end := first + int64(len(p))/4096
	if off%4096 != 0 || len(p)%4096 != 0 || first < 0 || end > v.info.sectors {
		return false
	}
	for s := first; s < end; {
		l := v.layer(s)
		e := s + 1
		for e < end && v.layer(e) == l {
			e++
		}
		b := p[(s-first)*4096 : (e-first)*4096]
		switch {
		case l == 0:
			clear(b)
		case int(l) > len(v.files):
			v.stale.Store(true)
			return false
		default:
			n, err := rawio.Pread(v.files[l-1], b, s*4096)
			if errors.Is(err, io.EOF) {
				clear(b[n:]) // a layer shorter than the volume (older than an expansion)
			} else if err != nil {
				return false
			}
		}
		s = e
	}
	if v.seq.Load() != v.info.seq {
		v.stale.Store(true)
		return false
	}
	return true
}

// directState is a Client's direct read state.
type directState struct {
	cur      atomic.Pointer[view]
	fetching atomic.Bool
	mu       sync.Mutex // guards closed and the fetch goroutine's wg.Add
	closed   bool
	retryAt  atomic.Int64 // nanotime before which no fetch starts (after failures)
	failures atomic.Int64 // failed fetches in a row
	reads    atomic.Int64 // direct reads served (statistics, tests)
	writes   atomic.Int64 // direct writes served (statistics, tests)
}

// ReadDirect reads len(p) bytes at off (both multiples of 4096) straight
// from the replica's files when the client has a current view of a local
// replica that offers direct reads (ExtensionDirectRead), and reports
// whether it did; otherwise, and when the view turned out stale, p's content
// is undefined and the caller reads through the replica (ReadAt).
func (c *Client) ReadDirect(p []byte, off int64) bool {
	if c.withView(func(v *view) bool { return v.read(p, off) }) {
		c.direct.reads.Add(1)
		return true
	}
	return false
}

// withView runs do with the current view (held for the call) and reports
// its result; false without a usable view. A view found stale is dropped
// and a new one fetched in the background.
func (c *Client) withView(do func(v *view) bool) bool {
	if !c.DirectCapable() || c.Err() != nil {
		return false
	}
	v := c.direct.cur.Load()
	if v == nil || !v.acquire() {
		c.refreshView()
		return false
	}
	ok := do(v)
	v.release()
	if ok {
		return true
	}
	if v.stale.Load() && c.direct.cur.CompareAndSwap(v, nil) {
		v.release()
		c.refreshView()
	}
	return false
}

// DirectCapable reports whether the client may read (and, with a view that
// has a write slot, write) the replica's files itself: it reached the
// replica over its local socket and the replica offers direct reads.
func (c *Client) DirectCapable() bool { return c.local && c.opts.DirectRead }

// DirectReads returns how many reads ReadDirect served.
func (c *Client) DirectReads() int64 { return c.direct.reads.Load() }

// refreshView fetches a view in the background unless one is being fetched,
// the client is closed, or the last attempt failed less than viewRetry ago.
func (c *Client) refreshView() {
	d := &c.direct
	if nanotime() < d.retryAt.Load() || !d.fetching.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.fetching.Store(false)
		return
	}
	c.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer d.fetching.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), localDialTimeout)
		v, err := fetchView(ctx, c.addr)
		cancel()
		if err != nil {
			n := min(d.failures.Add(1)-1, 5)
			d.retryAt.Store(nanotime() + int64(viewRetry)<<n)
			return
		}
		d.failures.Store(0)
		if old := d.cur.Swap(v); old != nil {
			old.release()
		}
	}()
}

// dropStaleView releases the current view once the replica changed (so an
// idle engine does not keep purged snapshot files, whose descriptors the view
// holds, from being freed); the next read fetches a new one.
func (c *Client) dropStaleView() {
	v := c.direct.cur.Load()
	if v == nil || !v.acquire() {
		return
	}
	stale := v.seq.Load() != v.info.seq
	v.release()
	if stale && c.direct.cur.CompareAndSwap(v, nil) {
		v.release()
	}
}

// closeDirect stops view fetches and drops the current view (reads in
// flight keep theirs until they finish).
func (c *Client) closeDirect() {
	d := &c.direct
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// releaseDirect drops the current view; call after the fetch goroutine ended.
func (c *Client) releaseDirect() {
	if v := c.direct.cur.Swap(nil); v != nil {
		v.release()
	}
}
