package testutil

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// QemuShell is an interactive qemu-io on the volume's nbd socket with
// reconnect-delay, so that it reconnects when the engine drains it: the
// client a live upgrade must not disturb. Commands go one at a time: qemu-io
// reads stdin with stdio, so a second line already buffered would wait for
// more input; each command is done when the next prompt appears.
type QemuShell struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	mu      sync.Mutex
	out     strings.Builder
	prompts int
	changed chan struct{}
	done    chan error
}

const qemuPrompt = "qemu-io> "

var wroteRE = regexp.MustCompile(`wrote (\d+)/(\d+) bytes at offset (\d+)`)

// StartQemuShell runs qemu-io on export vol of the NBD server on unix socket
// sock (reconnect-delay 20 s) and waits for its first prompt; it is killed
// at the test's end.
func StartQemuShell(t *testing.T, sock, vol string) *QemuShell {
	t.Helper()
	bin := RequireTool(t, "qemu-io")
	return StartQemuShellCmd(t, exec.Command(bin, QemuShellArgs(sock, vol)...))
}

// QemuShellArgs are qemu-io's arguments of StartQemuShell: export vol of
// the NBD server on unix socket sock, reconnect-delay 20 s.
func QemuShellArgs(sock, vol string) []string {
	return []string{"--image-opts", "driver=nbd,server.type=unix,server.path=" + sock + ",export=" + vol + ",reconnect-delay=20"}
}

// StartQemuShellCmd is StartQemuShell with the command given (qemu-io with
// QemuShellArgs, possibly run through nsenter inside a test node); its
// stdin and output are set here.
func StartQemuShellCmd(t *testing.T, cmd *exec.Cmd) *QemuShell {
	t.Helper()
	q := &QemuShell{t: t, cmd: cmd, changed: make(chan struct{}, 1), done: make(chan error, 1)}
	q.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if q.in, err = q.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	q.cmd.Stdout, q.cmd.Stderr = pw, pw
	if err := q.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go q.readOutput(pr)
	go func() { err := q.cmd.Wait(); _ = pw.Close(); q.done <- err }()
	t.Cleanup(func() { _ = q.cmd.Process.Kill() })
	q.waitPrompts(1)
	return q
}

func (q *QemuShell) readOutput(r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		q.mu.Lock()
		q.out.Write(buf[:n])
		q.prompts = strings.Count(q.out.String(), qemuPrompt)
		q.mu.Unlock()
		select {
		case q.changed <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// Output is everything qemu-io printed so far.
func (q *QemuShell) Output() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.out.String()
}

// waitPrompts waits until qemu-io printed n prompts in all.
func (q *QemuShell) waitPrompts(n int) {
	q.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		q.mu.Lock()
		have := q.prompts
		q.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-q.changed:
		case err := <-q.done:
			q.t.Fatalf("qemu-io exited: %v\n%s", err, q.Output())
		case <-timeout:
			q.t.Fatalf("qemu-io: no prompt %d after 60 s\n%s", n, q.Output())
		}
	}
}

// command sends one command line and waits for the prompt after it.
func (q *QemuShell) command(line string) {
	q.t.Helper()
	q.mu.Lock()
	n := q.prompts
	q.mu.Unlock()
	if _, err := io.WriteString(q.in, line+"\n"); err != nil {
		q.t.Fatalf("qemu-io stdin: %v\n%s", err, q.Output())
	}
	q.waitPrompts(n + 1)
}

// round writes pattern pat to each 64 KiB chunk in chunks with aio_write
// (all in flight at once), waits for them (aio_flush) and returns how long
// that took. Any error fails the test.
func (q *QemuShell) round(chunks []int64, pat byte, chunk int64) time.Duration {
	q.t.Helper()
	from := len(q.Output())
	t0 := time.Now()
	for _, c := range chunks {
		q.command(fmt.Sprintf("aio_write -P %d %d %d", pat, c*chunk, chunk))
	}
	q.command("aio_flush")
	d := time.Since(t0)
	out := q.Output()[from:]
	if strings.Contains(out, "failed") || strings.Contains(out, "rror") {
		q.t.Fatalf("qemu-io I/O error:\n%s", out)
	}
	want := map[int64]bool{}
	for _, c := range chunks {
		want[c*chunk] = true
	}
	for _, m := range wroteRE.FindAllStringSubmatch(out, -1) {
		off, _ := strconv.ParseInt(m[3], 10, 64)
		if m[1] != m[2] || !want[off] {
			q.t.Fatalf("qemu-io unexpected completion %q\n%s", m[0], out)
		}
		delete(want, off)
	}
	if len(want) > 0 {
		q.t.Fatalf("qemu-io: %d writes not reported after aio_flush\n%s", len(want), out)
	}
	return d
}

// Quit ends qemu-io and fails the test when it exits with an error or
// does not exit within 30 s.
func (q *QemuShell) Quit() {
	q.t.Helper()
	_, _ = io.WriteString(q.in, "quit\n")
	select {
	case err := <-q.done:
		if err != nil {
			q.t.Fatalf("qemu-io exit: %v\n%s", err, q.Output())
		}
	case <-time.After(30 * time.Second):
		q.t.Fatalf("qemu-io did not quit\n%s", q.Output())
	}
}

// ModelWriter issues rounds of 8 writes of one pattern to random chunks
// through a qemu-io shell and keeps the model of the last pattern per chunk
// (0 = never written) that a test compares the volume with (Expected).
type ModelWriter struct {
	q *QemuShell
	// Model is the last pattern byte written to each chunk (0 = never).
	Model []byte
	rng   *rand.Rand
	pat   byte
	chunk int64
}

// NewModelWriter writes through q to a volume of size bytes in chunks of
// chunk bytes, choosing chunks from seed.
func NewModelWriter(q *QemuShell, size, chunk int64, seed int64) *ModelWriter {
	return &ModelWriter{q: q, Model: make([]byte, size/chunk), rng: rand.New(rand.NewSource(seed)), chunk: chunk}
}

// Round writes one round and returns how long the client took; an I/O
// error fails the test.
func (w *ModelWriter) Round() time.Duration {
	w.pat = w.pat%250 + 1
	chunks := w.rng.Perm(len(w.Model))[:8]
	cs := make([]int64, len(chunks))
	for i, c := range chunks {
		cs[i] = int64(c)
	}
	d := w.q.round(cs, w.pat, w.chunk)
	for _, c := range chunks {
		w.Model[c] = w.pat
	}
	return d
}

// Expected is the volume image the model describes: each chunk filled with
// its last pattern byte, zeros where nothing was written.
func (w *ModelWriter) Expected() []byte {
	out := make([]byte, int64(len(w.Model))*w.chunk)
	for c, p := range w.Model {
		if p != 0 {
			copy(out[int64(c)*w.chunk:], bytes.Repeat([]byte{p}, int(w.chunk)))
		}
	}
	return out
}
