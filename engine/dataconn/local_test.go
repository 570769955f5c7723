package dataconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/rawio"
)

// TestDialReplicaLocal: with the server also on LocalName(addr), DialReplica
// goes over the unix socket (the server counts the connections there) and
// I/O works; without it, DialReplica falls back to TCP.
func TestDialReplicaLocal(t *testing.T) {
	for _, local := range []bool{true, false} {
		m := newMemStore(1 << 20)
		s, addr := startServer(t, m)
		if local {
			l, err := ListenLocal(addr)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = s.Serve(l) }()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := DialReplica(ctx, addr, Options{Conns: 2, Local: true})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if c.Local() != local || c.Addr() != addr {
			t.Fatalf("local socket served %v: client Local() %v, Addr %q (want %q)", local, c.Local(), c.Addr(), addr)
		}
		if err := c.PingAll(); err != nil {
			t.Fatal(err)
		}
		if n := s.Conns(); n != 2 {
			t.Fatalf("server counts %d connections, want 2", n)
		}
		want := bytes.Repeat([]byte{0x5a}, 8192)
		if _, err := c.WriteAt(want, 4096); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := c.ReadAt(got, 4096); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read back over local=%v: err %v, equal %v", local, err, bytes.Equal(got, want))
		}
		c.Close()
		s.Close()
	}
}

// TestLocalNameUnique: the abstract name is taken while a server holds it,
// so a second replica on the same address cannot shadow the first.
func TestLocalNameUnique(t *testing.T) {
	addr := fmt.Sprintf("test-%d:1", os.Getpid()) // not a TCP address: the name alone is tested
	l, err := ListenLocal(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l2, err := ListenLocal(addr); err == nil {
		l2.Close()
		t.Fatal("second listener on the same local name succeeded")
	}
}

// TestStuckReplicaDoesNotBlockSubmitter: a request larger than the socket
// buffer to a server that stopped reading returns from Start at once, so
// the caller can go on (the replicator sends each write to every replica
// before it waits); the request then fails by timeout.
func TestStuckReplicaDoesNotBlockSubmitter(t *testing.T) {
	l, err := ListenLocal(fmt.Sprintf("stuck-%d:1", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and never read
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c, err := Dial(ctx, "unix", l.Addr().String(), Options{Conns: 1, Timeout: 500 * time.Millisecond})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	started := make(chan *Op)
	go func() { started <- c.Start(TypeWrite, make([]byte, MaxDataLen), 0, MaxDataLen) }()
	var op *Op
	select {
	case op = <-started:
	case <-time.After(2 * time.Second):
		t.Fatal("Start blocked on a full socket")
	}
	if _, err := op.Wait(); !errors.Is(err, ErrTimeout) {
		t.Fatalf("write to a stuck server: %v, want ErrTimeout", err)
	}
}

// TestSpinOnlyAtSustainedDepthOne: the reader of answers does not spin
// before rawio.SpinRun reads in a row found at most one request in flight,
// nor at a greater depth, and starts over after one (whether it then spins
// is rawio.DepthOne's decision, tested there with the CPU pressure set).
func TestSpinOnlyAtSustainedDepthOne(t *testing.T) {
	cc := &clientConn{c: &Client{}, br: bufio.NewReader(strings.NewReader(""))}
	cc.c.inflight.Store(1)
	for i := 1; i < rawio.SpinRun; i++ {
		if cc.beforeRead() {
			t.Fatalf("read %d at depth 1 spins, want none before %d reads", i, rawio.SpinRun)
		}
	}
	cc.c.inflight.Store(2)
	for i := 0; i < 2*rawio.SpinRun; i++ {
		if cc.beforeRead() {
			t.Fatalf("read %d at depth 2 spins", i)
		}
	}
	cc.c.inflight.Store(1)
	if cc.beforeRead() {
		t.Fatal("first read back at depth 1 spins")
	}
}
