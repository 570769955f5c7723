package enginetest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
)

// lhDataServer is Longhorn's replica data server (pkg/dataconn/server.go as
// longhorn-engine-wire.md §6 describes it): every request is handled in a
// goroutine of its own and answered with the request's header (seq and
// offset echoed); types other than Read, Write, Ping and Unmap are dropped
// without an answer; a full disk is an Error whose text says "no space
// left on device"; the connection ends with a best-effort Close frame of
// magic 0.
type lhDataServer struct {
	r  *lhReplica
	ln net.Listener

	mu      sync.Mutex
	conns   map[net.Conn]bool
	dropped map[uint32]int // request types dropped without an answer
}

const (
	lhRead, lhWrite, lhResponse, lhError, lhEOF, lhClose, lhPing, lhUnmap = 0, 1, 2, 3, 4, 5, 6, 7
)

func (s *lhDataServer) serve() {
	s.conns, s.dropped = map[net.Conn]bool{}, map[uint32]int{}
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		go s.handle(c)
	}
}

func (s *lhDataServer) close() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

func (s *lhDataServer) droppedTypes() map[uint32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint32]int{}
	for k, v := range s.dropped {
		out[k] = v
	}
	return out
}

type lhMsg struct {
	seq, typ uint32
	off      int64
	size     uint32
	data     []byte
}

func (s *lhDataServer) handle(c net.Conn) {
	var wmu sync.Mutex
	reply := func(m lhMsg) {
		b := make([]byte, 26+len(m.data))
		binary.LittleEndian.PutUint16(b[0:], 0x1b01)
		binary.LittleEndian.PutUint32(b[2:], m.seq)
		binary.LittleEndian.PutUint32(b[6:], m.typ)
		binary.LittleEndian.PutUint64(b[10:], uint64(m.off))
		binary.LittleEndian.PutUint32(b[18:], m.size)
		binary.LittleEndian.PutUint32(b[22:], uint32(len(m.data)))
		copy(b[26:], m.data)
		wmu.Lock()
		_, _ = c.Write(b)
		wmu.Unlock()
	}
	defer func() {
		var closeFrame [26]byte
		binary.LittleEndian.PutUint32(closeFrame[6:], lhClose) // magic 0
		wmu.Lock()
		_, _ = c.Write(closeFrame[:])
		wmu.Unlock()
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	var hdr [26]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		if binary.LittleEndian.Uint16(hdr[0:]) != 0x1b01 {
			return // "wrong API version received"
		}
		m := lhMsg{seq: binary.LittleEndian.Uint32(hdr[2:]), typ: binary.LittleEndian.Uint32(hdr[6:]),
			off: int64(binary.LittleEndian.Uint64(hdr[10:])), size: binary.LittleEndian.Uint32(hdr[18:])}
		if n := binary.LittleEndian.Uint32(hdr[22:]); n > 0 {
			if n > 64<<20 {
				return
			}
			m.data = make([]byte, n)
			if _, err := io.ReadFull(c, m.data); err != nil {
				return
			}
		}
		switch m.typ {
		case lhRead, lhWrite, lhPing, lhUnmap:
			go func() { reply(s.do(m)) }()
		default:
			s.mu.Lock()
			s.dropped[m.typ]++
			s.mu.Unlock()
		}
	}
}

// do runs one request against the store and returns the answer.
func (s *lhDataServer) do(m lhMsg) lhMsg {
	st := s.r.store()
	if st == nil {
		return errMsg(m, errors.New("replica no longer exist"))
	}
	switch m.typ {
	case lhPing:
		return lhMsg{seq: m.seq, typ: lhResponse, off: m.off}
	case lhRead:
		buf := make([]byte, m.size)
		n, err := st.ReadAt(buf, m.off)
		if err != nil {
			return errMsg(m, err)
		}
		return lhMsg{seq: m.seq, typ: lhResponse, off: m.off, size: uint32(n), data: buf[:n]}
	case lhWrite:
		n, err := st.WriteAt(m.data, m.off)
		if err != nil {
			return errMsg(m, err)
		}
		return lhMsg{seq: m.seq, typ: lhResponse, off: m.off, size: uint32(n)}
	default: // unmap
		n, err := st.UnmapAt(m.size, m.off)
		if err != nil {
			return errMsg(m, err)
		}
		return lhMsg{seq: m.seq, typ: lhResponse, off: m.off, size: uint32(n)}
	}
}

func errMsg(m lhMsg, err error) lhMsg {
	text := err.Error()
	if strings.Contains(text, "no space") && !strings.Contains(text, "no space left on device") {
		text += ": no space left on device"
	}
	return lhMsg{seq: m.seq, typ: lhError, off: m.off, size: uint32(len(text)), data: []byte(text)}
}
