package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"google.golang.org/protobuf/types/known/emptypb"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// proc is one longhorn process started by a test.
type proc struct {
	t    *testing.T
	name string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, args: args, log: filepath.Join(t.TempDir(), name+".log")}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(testutil.LonghornBinary(p.t), p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(p.cmd, p.done)
}

// kill sends SIGKILL and waits for the process.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits up to 10 s, then kills.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// replicaProc is a `longhorn engine replica` process.
type replicaProc struct {
	*proc
	dir  string
	port int
	addr string
}

func startReplica(t *testing.T, dir string, size int64, extra ...string) *replicaProc {
	t.Helper()
	port := testutil.FreePortRange(t, 10)
	r := &replicaProc{dir: dir, port: port, addr: "tcp://127.0.0.1:" + strconv.Itoa(port)}
	args := append([]string{"engine", "replica", dir, "--size", strconv.FormatInt(size, 10),
		"--listen", "127.0.0.1:" + strconv.Itoa(port)}, extra...)
	r.proc = startProc(t, "replica-"+filepath.Base(dir), args...)
	r.waitReady()
	return r
}

func (r *replicaProc) restart() {
	r.t.Helper()
	r.start()
	r.waitReady()
}

func (r *replicaProc) waitReady() {
	r.t.Helper()
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(r.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		r.t.Fatal(err)
	}
	defer conn.Close()
	cl := enginerpc.NewReplicaServiceClient(conn)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cl.ReplicaGet(ctx, &emptypb.Empty{})
		cancel()
		if err == nil {
			return
		}
		if r.exited() || time.Now().After(deadline) {
			r.t.Fatalf("replica %s not ready: %v\n%s", r.dir, err, r.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readAll reads size bytes straight from the replica's data server.
func (r *replicaProc) readAll(size int64) []byte {
	r.t.Helper()
	c, err := dataconn.Dial(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(r.port+1), dataconn.Options{Conns: 1})
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, size)
	for off := int64(0); off < size; off += 4 << 20 {
		n := min(4<<20, size-off)
		if _, err := c.ReadAt(buf[off:off+n], off); err != nil {
			r.t.Fatalf("read replica %s at %d: %v", r.addr, off, err)
		}
	}
	return buf
}

// engineProc is a `longhorn engine controller` process with an nbd frontend
// on a unix socket.
type engineProc struct {
	*proc
	url  string
	sock string
	vol  string
}

func startEngine(t *testing.T, vol string, size int64, reps []*replicaProc, extra ...string) *engineProc {
	t.Helper()
	var addrs []string
	for _, r := range reps {
		addrs = append(addrs, r.addr)
	}
	return startEngineAt(t, vol, size, addrs, extra...)
}

// startEngineAt is startEngine with replica addresses (of any replica kind).
func startEngineAt(t *testing.T, vol string, size int64, addrs []string, extra ...string) *engineProc {
	t.Helper()
	e := &engineProc{vol: vol, url: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
		sock: filepath.Join(t.TempDir(), "nbd.sock")}
	args := []string{"engine", "controller", vol, "--size", strconv.FormatInt(size, 10), "--listen", e.url,
		"--frontend", "nbd", "--nbd-listen", "unix:" + e.sock}
	for _, a := range addrs {
		args = append(args, "--replica", a)
	}
	e.proc = startProc(t, "engine-"+vol, append(args, extra...)...)
	e.waitReady()
	return e
}

func (e *engineProc) restart() {
	e.t.Helper()
	_ = os.Remove(e.sock)
	e.start()
	e.waitReady()
}

func (e *engineProc) waitReady() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := e.api().VolumeGet(context.Background(), &emptypb.Empty{})
		if err == nil && v.GetFrontendState() == "up" {
			return
		}
		if e.exited() || time.Now().After(deadline) {
			e.t.Fatalf("engine not ready: %v %v\n%s", v, err, e.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *engineProc) api() enginerpc.ControllerServiceClient {
	conn, err := grpc.NewClient(e.url, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return enginerpc.NewControllerServiceClient(conn)
}

// uri is the NBD URI of the volume.
func (e *engineProc) uri() string { return "nbd+unix:///" + e.vol + "?socket=" + e.sock }

// ctl runs `longhorn engine ctl --url URL args...` and returns its output.
func (e *engineProc) ctl(args ...string) string {
	e.t.Helper()
	out, err := exec.Command(testutil.LonghornBinary(e.t), append([]string{"engine", "ctl", "--url", e.url}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("engine ctl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// modes returns replica address -> mode from `ctl ls-replica`.
func (e *engineProc) modes() map[string]string {
	e.t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(e.ctl("ls-replica"), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 2 {
			m[f[0]] = f[1]
		}
	}
	return m
}

// run runs an external tool with a deadline and returns its output.
func run(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.RequireTool(t, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func fileOf(t *testing.T, size int64, seed int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), fmt.Sprintf("src-%d.raw", seed))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		for i := range buf {
			buf[i] = byte(int64(i)*7 + off/4096 + seed)
		}
		if off/(1<<20)%3 == 1 {
			clear(buf) // some zero megabytes, so the copies see holes
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// runTool runs a tool with a deadline and returns its combined output and error.
func runTool(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func testutilBinary(t *testing.T) string { return testutil.LonghornBinary(t) }
