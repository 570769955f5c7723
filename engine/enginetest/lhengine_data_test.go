package enginetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// lhDataClient is Longhorn's controller-side dataconn client
// (longhorn-engine-wire.md §6.4), written from the facts for the fake
// Longhorn engine: 2 connections per replica, one seq counter shared by
// both, replies matched by seq alone, a Close frame of magic 0 (or EOF)
// ends a connection, only types Read, Write, Unmap and Ping are sent.
type lhDataClient struct {
	conns   []net.Conn
	wmu     []sync.Mutex
	seq     atomic.Uint32
	rr      atomic.Uint32
	mu      sync.Mutex
	pending map[uint32]chan lhMsg
	err     error
}

func dialLHData(addr string) (*lhDataClient, error) {
	c := &lhDataClient{pending: map[uint32]chan lhMsg{}, wmu: make([]sync.Mutex, 2)}
	for i := 0; i < 2; i++ {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			c.close()
			return nil, err
		}
		c.conns = append(c.conns, nc)
		go c.read(nc)
	}
	return c, nil
}

func (c *lhDataClient) close() {
	for _, nc := range c.conns {
		nc.Close()
	}
}

func (c *lhDataClient) read(nc net.Conn) {
	var hdr [26]byte
	for {
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			c.fail(err)
			return
		}
		if binary.LittleEndian.Uint16(hdr[0:]) != 0x1b01 {
			c.fail(errors.New("connection closed by the replica"))
			return
		}
		m := lhMsg{seq: binary.LittleEndian.Uint32(hdr[2:]), typ: binary.LittleEndian.Uint32(hdr[6:]),
			off: int64(binary.LittleEndian.Uint64(hdr[10:])), size: binary.LittleEndian.Uint32(hdr[18:])}
		if n := binary.LittleEndian.Uint32(hdr[22:]); n > 0 {
			m.data = make([]byte, n)
			if _, err := io.ReadFull(nc, m.data); err != nil {
				c.fail(err)
				return
			}
		}
		c.mu.Lock()
		ch := c.pending[m.seq]
		delete(c.pending, m.seq)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (c *lhDataClient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for seq, ch := range c.pending {
		close(ch)
		delete(c.pending, seq)
	}
}

// do sends one request and waits for its answer (8 s, Longhorn's
// engine-replica-timeout).
func (c *lhDataClient) do(typ uint32, off int64, size uint32, data []byte) (lhMsg, error) {
	seq := c.seq.Add(1)
	ch := make(chan lhMsg, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return lhMsg{}, c.err
	}
	c.pending[seq] = ch
	c.mu.Unlock()
	b := make([]byte, 26+len(data))
	binary.LittleEndian.PutUint16(b[0:], 0x1b01)
	binary.LittleEndian.PutUint32(b[2:], seq)
	binary.LittleEndian.PutUint32(b[6:], typ)
	binary.LittleEndian.PutUint64(b[10:], uint64(off))
	binary.LittleEndian.PutUint32(b[18:], size)
	binary.LittleEndian.PutUint32(b[22:], uint32(len(data)))
	copy(b[26:], data)
	i := int(c.rr.Add(1)) % len(c.conns)
	c.wmu[i].Lock()
	_, err := c.conns[i].Write(b)
	c.wmu[i].Unlock()
	if err != nil {
		return lhMsg{}, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return lhMsg{}, fmt.Errorf("connection failed: %v", c.err)
		}
		if m.typ == lhError {
			return m, fmt.Errorf("replica: %s", m.data)
		}
		if m.seq != seq || m.off != off {
			return m, fmt.Errorf("answer seq %d offset %d to request seq %d offset %d", m.seq, m.off, seq, off)
		}
		return m, nil
	case <-time.After(8 * time.Second):
		return lhMsg{}, errors.New("r/w timeout")
	}
}
