package main

import (
	"net"

	"github.com/longhorn-go/longhorn/engine/dataconn"
)

type mem struct{ d []byte }

func (m *mem) ReadAt(p []byte, off int64) (int, error)   { return copy(p, m.d[off:]), nil }
func (m *mem) WriteAt(p []byte, off int64) (int, error)  { return copy(m.d[off:], p), nil }
func (m *mem) UnmapAt(n uint32, off int64) (int, error)  { return int(n), nil }
func (m *mem) Flush() error                              { return nil }
func (m *mem) PingResponse() error                       { return nil }

func serve(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	_ = dataconn.NewServer(&mem{d: make([]byte, 64<<20)}, nil).Serve(l)
}
