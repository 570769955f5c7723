package iscsi

import (
	"context"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// memBackend is an in-memory Backend: it makes the benchmarks measure the
// target, not a disk.
type memBackend struct {
	mu   sync.RWMutex
	data []byte
}

func (m *memBackend) ReadAt(p []byte, off int64) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off+int64(len(p)) > int64(len(m.data)) {
		return 0, frontend.ErrOutOfRange
	}
	return copy(p, m.data[off:]), nil
}

func (m *memBackend) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off+int64(len(p)) > int64(len(m.data)) {
		return 0, frontend.ErrOutOfRange
	}
	return copy(m.data[off:], p), nil
}

func (m *memBackend) UnmapAt(n uint32, off int64) (int, error) { return int(n), nil }
func (m *memBackend) Flush() error                             { return nil }
func (m *memBackend) Size() int64                              { return int64(len(m.data)) }

// benchTarget serves a 64 MiB memory volume.
func benchTarget(b *testing.B) string {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	tg, err := New(Config{Listen: "127.0.0.1:0", Log: logrus.NewEntry(l)})
	if err != nil {
		b.Fatal(err)
	}
	if err := tg.Startup(context.Background(), testVolume, 64<<20, &memBackend{data: make([]byte, 64<<20)}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tg.Shutdown() })
	return tg.Addr().String()
}

// benchPipelined keeps depth 4 KiB commands outstanding (reads or writes
// with immediate data) and reports the target's cost per command; the
// allocations include the test initiator's.
func benchPipelined(b *testing.B, write bool) {
	addr := benchTarget(b)
	in := dialTarget(b, addr)
	if st := in.login(loginOpts{}); st != 0 {
		b.Fatalf("login 0x%04x", st)
	}
	const depth = 32
	data := make([]byte, 4096)
	send := func(i int) {
		lba := uint32(i%16384) * 8
		var h bhs
		var imm []byte
		if write {
			h, imm = in.cmdPDU(in.nextITT(), 1, write10(lba, 8), data, 0)
		} else {
			h, _ = in.cmdPDU(in.nextITT(), 1, read10(lba, 8), nil, 4096)
		}
		in.send(&h, imm)
	}
	b.SetBytes(4096)
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for ; sent < min(depth, b.N); sent++ {
		send(sent)
	}
	for done := 0; done < b.N; {
		h, _ := in.recv()
		if h.opcode() == opSCSIResp || (h.opcode() == opDataIn && h[1]&0x01 != 0) {
			done++
			if sent < b.N {
				send(sent)
				sent++
			}
		}
	}
}

func BenchmarkRead4KQD32(b *testing.B)  { benchPipelined(b, false) }
func BenchmarkWrite4KQD32(b *testing.B) { benchPipelined(b, true) }
