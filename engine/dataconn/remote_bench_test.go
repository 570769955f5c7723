package dataconn

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/perfstat"
)

// The Remote benchmarks run the data server in a helper process (this test
// binary re-executed with helperEnv set), as the engine and a replica are
// separate processes, and report per request what each side spent: CPU time,
// context switches and read/write system calls (internal/perfstat), each also
// as a ratio to the floor, a minimal Go request/answer exchange of the same
// sizes over a second TCP connection to the same helper, measured in the same
// run. Times are not asserted anywhere.

const helperEnv = "DATACONN_BENCH_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	os.Exit(m.Run())
}

// runHelper serves a 64 MiB memStore with dataconn on one port and the floor
// protocol on another, prints "DATAADDR FLOORADDR", and exits when stdin closes.
func runHelper() {
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		return
	}
	s := NewServer(newMemStore(64<<20), nil)
	go func() { _ = s.Serve(dl) }()
	go func() {
		for {
			nc, err := fl.Accept()
			if err != nil {
				return
			}
			go serveFloor(nc)
		}
	}()
	fmt.Println(dl.Addr(), fl.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// serveFloor is the floor server: for each header it reads, it answers with a
// header and, for a read, Size bytes, batching answers like Server does.
func serveFloor(nc net.Conn) {
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	br := bufio.NewReaderSize(nc, serverReadBuffer)
	bw := bufio.NewWriterSize(nc, 1<<20)
	data := make([]byte, MaxDataLen)
	for {
		h, err := readHeader(br)
		if err != nil {
			return
		}
		if _, err := br.Discard(int(h.DataLen)); err != nil {
			return
		}
		resp := Header{Seq: h.Seq, Type: TypeResponse, Size: h.Size}
		if h.Type == TypeRead {
			resp.DataLen = h.Size
		}
		var hb [HeaderSize]byte
		resp.Encode(hb[:])
		_, _ = bw.Write(hb[:])
		_, _ = bw.Write(data[:resp.DataLen])
		if !bufferedMessage(br) {
			if bw.Flush() != nil {
				return
			}
		}
	}
}

type helper struct {
	cmd         *exec.Cmd
	stdin       io.Closer
	data, floor string
	pid         int
}

func startHelper(b *testing.B) *helper {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 {
		_ = in.Close()
		_ = cmd.Wait()
		b.Fatalf("helper: %q %v", line, err)
	}
	h := &helper{cmd: cmd, stdin: in, data: f[0], floor: f[1], pid: cmd.Process.Pid}
	b.Cleanup(func() {
		_ = h.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return h
}

// floorRun does n request/answer exchanges of typ and size at depth qd over
// one connection from one goroutine: qd requests in one write, then their qd
// answers.
func floorRun(b *testing.B, addr string, typ MsgType, size, qd, n int) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	_ = nc.(*net.TCPConn).SetNoDelay(true)
	br := bufio.NewReaderSize(nc, clientReadBuffer)
	per := HeaderSize
	if typ == TypeWrite {
		per += size
	}
	req := make([]byte, per*qd)
	for i := 0; i < qd; i++ {
		h := Header{Seq: uint32(i), Type: typ, Size: uint32(size)}
		if typ == TypeWrite {
			h.DataLen = uint32(size)
		}
		h.Encode(req[i*per:])
	}
	buf := make([]byte, size)
	for done := 0; done < n; done += qd {
		if _, err := nc.Write(req); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < qd; i++ {
			h, err := readHeader(br)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(br, buf[:h.DataLen]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// clientRun does n requests through c from qd goroutines.
func clientRun(b *testing.B, c *Client, typ MsgType, size, qd, n int) {
	var wg sync.WaitGroup
	for g := 0; g < qd; g++ {
		cnt := n / qd
		if g == 0 {
			cnt += n % qd
		}
		wg.Add(1)
		go func(g, cnt int) {
			defer wg.Done()
			buf := make([]byte, size)
			for i := 0; i < cnt; i++ {
				off := int64((g*7919+i)%(64<<20/size)) * int64(size)
				if _, err := c.Start(typ, buf, off, uint32(size)).Wait(); err != nil {
					b.Error(err)
					return
				}
			}
		}(g, cnt)
	}
	wg.Wait()
}

// measure runs fn and returns what this process and the helper spent.
func measure(pid int, fn func()) (self, srv perfstat.Sample) {
	s0, h0 := perfstat.Self(), perfstat.Proc(pid)
	fn()
	return perfstat.Self().Sub(s0), perfstat.Proc(pid).Sub(h0)
}

// BenchmarkRemote measures requests to a data server in another process at
// queue depth 1 and 32: the client's (engine's) and the server's (replica's)
// CPU, context switches and read/write calls per request, absolute and as
// ratios to the floor exchange of the same shape.
func BenchmarkRemote(b *testing.B) {
	h := startHelper(b)
	cases := []struct {
		name string
		typ  MsgType
		size int
	}{{"read-4k", TypeRead, 4096}, {"write-4k", TypeWrite, 4096}, {"read-128k", TypeRead, 128 << 10}, {"write-128k", TypeWrite, 128 << 10}}
	for _, tc := range cases {
		for _, qd := range []int{1, 32} {
			if tc.size > 4096 && qd != 1 {
				continue
			}
			b.Run(fmt.Sprintf("%s/qd%d", tc.name, qd), func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				c, err := Dial(ctx, "tcp", h.data, Options{})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				clientRun(b, c, tc.typ, tc.size, qd, 2*qd) // warm up
				b.SetBytes(int64(tc.size))
				b.ReportAllocs()
				b.ResetTimer()
				fs, fh := measure(h.pid, func() { floorRun(b, h.floor, tc.typ, tc.size, qd, b.N) })
				cs, ch := measure(h.pid, func() { clientRun(b, c, tc.typ, tc.size, qd, b.N) })
				b.StopTimer()
				n := b.N
				perfstat.Report(b, "", cs.Per(n))
				perfstat.Report(b, "srv-", ch.Per(n))
				perfstat.ReportRatio(b, "", cs.Per(n), fs.Per(n))
				perfstat.ReportRatio(b, "srv-", ch.Per(n), fh.Per(n))
			})
		}
	}
}
