package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// startUpgradeEngine starts a new engine of e's volume on the replicas reps
// (processes on the same data directories) with --upgrade-from e, on e's
// nbd socket. It does not wait.
func startUpgradeEngine(t *testing.T, e *engineProc, size int64, reps []*replicaProc) *engineProc {
	t.Helper()
	n := &engineProc{vol: e.vol, url: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)), sock: e.sock}
	args := []string{"engine", "controller", e.vol, "--size", strconv.FormatInt(size, 10), "--listen", n.url,
		"--frontend", "nbd", "--nbd-listen", "unix:" + e.sock, "--upgrade-from", e.url}
	for _, r := range reps {
		args = append(args, "--replica", r.addr)
	}
	n.proc = startProc(t, "engine-new-"+e.vol, args...)
	return n
}

// TestLiveUpgradeHandOver is the data plane of a live engine upgrade: while
// qemu-io keeps 8 writes in flight, a new engine on new replica processes
// (same directories) takes the nbd socket over, the old engine drains and
// hands the volume over, and the old processes go as the instance manager
// stops them (SIGHUP to the engine). qemu-io sees no error; the volume and
// both replicas hold exactly the last pattern written to every chunk.
func TestLiveUpgradeHandOver(t *testing.T) {
	testutilTools(t, "qemu-io", "nbdcopy")
	const size, chunk = 64 << 20, 64 << 10
	d1, d2 := t.TempDir(), t.TempDir()
	r1, r2 := startReplica(t, d1, size), startReplica(t, d2, size)
	e1 := startEngine(t, "upg", size, []*replicaProc{r1, r2})
	q := testutil.StartQemuShell(t, e1.sock, e1.vol)

	w := testutil.NewModelWriter(q, size, chunk, 20)
	var durs []time.Duration
	write := func() time.Duration {
		d := w.Round()
		durs = append(durs, d)
		return d
	}
	for range 30 {
		write()
	}
	base := slices.Clone(durs)

	n1, n2 := startReplica(t, d1, size), startReplica(t, d2, size)
	e2 := startUpgradeEngine(t, e1, size, []*replicaProc{n1, n2})
	// The writes go on while the new engine takes over; the round that
	// spans the hand-over is the pause the client sees.
	var during []time.Duration
	deadline := time.Now().Add(60 * time.Second)
	for !e2Ready(e2) {
		if e2.exited() || time.Now().After(deadline) {
			t.Fatalf("new engine did not take over:\n%s\nold engine:\n%s", e2.logText(), e1.logText())
		}
		during = append(during, write())
	}
	// The instance manager stops the old run with SIGHUP once the new one
	// listens; the old replica processes go with their instance manager.
	_ = e1.cmd.Process.Signal(syscall.SIGHUP)
	<-e1.done
	r1.stop()
	r2.stop()
	for range 30 {
		during = append(during, write())
	}
	q.Quit()
	if out := q.Output(); strings.Contains(out, "fail") || strings.Contains(out, "rror") {
		t.Fatalf("qemu-io reported errors:\n%s", out)
	}
	if !strings.Contains(e2.logText(), "took the volume over") {
		t.Fatalf("new engine log has no take-over:\n%s", e2.logText())
	}
	for _, p := range []string{e1.sock + ".prev", e1.sock + ".upgrade"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left behind: %v", p, err)
		}
	}

	want := verifyVolume(t, "volume through the new engine", e2, w.Model, size, chunk)
	verifyModel(t, "new replica 1", n1.readAll(size), want, chunk)
	verifyModel(t, "new replica 2", n2.readAll(size), want, chunk)
	t.Logf("bytes verified: %d (volume) + 2 x %d (replicas); %d rounds of 8 x 64 KiB writes",
		size, size, len(durs))
	t.Logf("client-seen round time: before median %v max %v; around the hand-over max %v (%d rounds)",
		median(base), slices.Max(base), slices.Max(during), len(during))
	if m := takeOverRE.FindStringSubmatch(e2.logText()); m != nil {
		t.Logf("engine-side: old engine drain+flush+close %s, socket rename to serving %s", m[1], m[2])
	}
}

var takeOverRE = regexp.MustCompile(`oldDrain=([0-9.]+[a-zµ]+) pause=([0-9.]+[a-zµ]+)`)

func e2Ready(e *engineProc) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	v, err := e.api().VolumeGet(ctx, &emptypb.Empty{})
	return err == nil && v.GetFrontendState() == "up"
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// verifyVolume reads the whole volume through engine e's NBD export with
// nbdcopy and checks it against model (the last pattern byte written per
// chunk, 0 = never written); it returns the expected image.
func verifyVolume(t *testing.T, what string, e *engineProc, model []byte, size, chunk int64) []byte {
	t.Helper()
	want := make([]byte, size)
	for c, p := range model {
		if p != 0 {
			copy(want[int64(c)*chunk:], bytes.Repeat([]byte{p}, int(chunk)))
		}
	}
	img := filepath.Join(t.TempDir(), "volume.raw")
	run(t, 2*time.Minute, "nbdcopy", e.uri(), img)
	got, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	verifyModel(t, what, got, want, chunk)
	return want
}

func verifyModel(t *testing.T, what string, got, want []byte, chunk int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	for off := int64(0); off < int64(len(want)); off += chunk {
		if !bytes.Equal(got[off:off+chunk], want[off:off+chunk]) {
			t.Fatalf("%s: chunk at %d differs: got %x... want %x...", what, off, got[off:off+8], want[off:off+8])
		}
	}
}

// TestLiveUpgradeRefused: a volume with a failed replica is not handed over;
// the new engine exits with the reason, the old one keeps serving its socket
// and the new replica processes stay closed.
func TestLiveUpgradeRefused(t *testing.T) {
	testutilTools(t, "qemu-io")
	const size = 16 << 20
	d1, d2 := t.TempDir(), t.TempDir()
	r1, r2 := startReplica(t, d1, size), startReplica(t, d2, size)
	e1 := startEngine(t, "upgno", size, []*replicaProc{r1, r2})
	r2.kill()
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x11 0 64k", e1.uri())
	n1, n2 := startReplica(t, d1, size), startReplica(t, d2, size)
	e2 := startUpgradeEngine(t, e1, size, []*replicaProc{n1, n2})
	select {
	case <-e2.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("new engine still runs:\n%s", e2.logText())
	}
	if log := e2.logText(); !strings.Contains(log, "hand-over refused") || !strings.Contains(log, "ERR") {
		t.Fatalf("new engine log lacks the refusal:\n%s", log)
	}
	out := run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x22 64k 64k", "-c", "read -P 0x11 0 64k",
		"-c", "read -P 0x22 64k 64k", e1.uri())
	if strings.Contains(out, "fail") || strings.Contains(out, "Pattern verification") {
		t.Fatalf("old engine after the refusal:\n%s", out)
	}
	for _, r := range []*replicaProc{n1} {
		if st := replicaState(t, r); st != "closed" {
			t.Fatalf("new replica %s is %s after the refusal, want closed", r.addr, st)
		}
	}
}

// replicaState is the state ReplicaGet reports ("closed", "open", "dirty").
func replicaState(t *testing.T, r *replicaProc) string {
	t.Helper()
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(r.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := enginerpc.NewReplicaServiceClient(conn).ReplicaGet(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatalf("replica %s: %v", r.addr, err)
	}
	return resp.GetReplica().GetState()
}

// TestLiveUpgradeAbort: the new engine gets the volume handed over but one
// of its replicas is unreachable, so it gives the volume back
// (VolumeUpgradeAbort) and exits; qemu-io, writing all along, sees no
// error, the old engine serves on its replicas again, and the new replica
// process is closed.
func TestLiveUpgradeAbort(t *testing.T) {
	testutilTools(t, "qemu-io", "nbdcopy")
	const size, chunk = 16 << 20, 64 << 10
	d1, d2 := t.TempDir(), t.TempDir()
	r1, r2 := startReplica(t, d1, size), startReplica(t, d2, size)
	e1 := startEngine(t, "upgab", size, []*replicaProc{r1, r2})
	q := testutil.StartQemuShell(t, e1.sock, e1.vol)
	w := testutil.NewModelWriter(q, size, chunk, 21)
	write := func() { w.Round() }
	for range 10 {
		write()
	}
	n1 := startReplica(t, d1, size)
	dead := &replicaProc{addr: "tcp://127.0.0.1:" + strconv.Itoa(testutil.FreePortRange(t, 10))}
	e2 := startUpgradeEngine(t, e1, size, []*replicaProc{n1, dead})
	deadline := time.Now().Add(90 * time.Second)
	for !e2.exited() {
		if time.Now().After(deadline) {
			t.Fatalf("new engine still runs:\n%s", e2.logText())
		}
		write()
	}
	if log := e2.logText(); !strings.Contains(log, "live upgrade:") || strings.Contains(log, "could not take the volume back") {
		t.Fatalf("new engine log:\n%s", log)
	}
	if !strings.Contains(e1.logText(), "hand-over aborted") {
		t.Fatalf("old engine did not take the volume back:\n%s", e1.logText())
	}
	for range 10 {
		write()
	}
	q.Quit()
	if st := replicaState(t, n1); st != "closed" {
		t.Fatalf("new replica is %s after the abort, want closed", st)
	}
	if m := e1.modes(); m[r1.addr] != "RW" || m[r2.addr] != "RW" {
		t.Fatalf("old engine replicas after the abort: %v", m)
	}
	verifyVolume(t, "volume through the old engine after the abort", e1, w.Model, size, chunk)
}

// TestLiveUpgradeNewEngineKilled: the new engine is killed after the old
// one handed the volume over (it hangs opening a stopped replica process):
// the old engine finds no listener on the socket, closes the new replicas
// and takes the volume back by itself; qemu-io, writing all along, sees no
// error and every byte is where the model says.
func TestLiveUpgradeNewEngineKilled(t *testing.T) {
	testutilTools(t, "qemu-io", "nbdcopy")
	const size, chunk = 16 << 20, 64 << 10
	d1, d2 := t.TempDir(), t.TempDir()
	r1, r2 := startReplica(t, d1, size), startReplica(t, d2, size)
	e1 := startEngine(t, "upgkill", size, []*replicaProc{r1, r2})
	q := testutil.StartQemuShell(t, e1.sock, e1.vol)
	w := testutil.NewModelWriter(q, size, chunk, 22)
	var rounds int
	var maxRound time.Duration
	write := func() {
		maxRound = max(maxRound, w.Round())
		rounds++
	}
	for range 10 {
		write()
	}
	n1, n2 := startReplica(t, d1, size), startReplica(t, d2, size)
	_ = n2.cmd.Process.Signal(syscall.SIGSTOP)
	e2 := startUpgradeEngine(t, e1, size, []*replicaProc{n1, n2})
	// The kill and the take-back run beside the writes, which the test
	// goroutine keeps issuing; the result comes back on done.
	done := make(chan error, 1)
	go func() { done <- killNewEngineAfterHandOver(e1, e2, n2) }()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		default:
			write()
		}
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		write() // writes go on through the old engine
	}
	q.Quit()
	for _, r := range []*replicaProc{n1, n2} {
		if st := replicaState(t, r); st != "closed" {
			t.Fatalf("new replica %s is %s after the self-abort, want closed", r.addr, st)
		}
	}
	if m := e1.modes(); m[r1.addr] != "RW" || m[r2.addr] != "RW" {
		t.Fatalf("old engine replicas: %v", m)
	}
	verifyVolume(t, "volume through the old engine after the self-abort", e1, w.Model, size, chunk)
	for _, p := range []string{e1.sock + ".prev", e1.sock + ".upgrade"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left behind: %v", p, err)
		}
	}
	t.Logf("%d rounds, longest %v (the new engine's death and the old engine's take-back)", rounds, maxRound)
}

// killNewEngineAfterHandOver waits for old's hand-over, kills the new engine,
// lets the stopped replica go on, and waits until old took the volume back.
func killNewEngineAfterHandOver(old, nw *engineProc, stopped *replicaProc) error {
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(old.logText(), "volume handed to the new engine") {
		if nw.exited() || time.Now().After(deadline) {
			return fmt.Errorf("no hand-over:\n%s\nnew engine:\n%s", old.logText(), nw.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	nw.kill()
	_ = stopped.cmd.Process.Signal(syscall.SIGCONT)
	for !strings.Contains(old.logText(), "hand-over aborted") {
		if time.Now().After(deadline) {
			return fmt.Errorf("old engine did not take the volume back:\n%s", old.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// TestLiveUpgradeFrontendsRefused: a new engine with a frontend that cannot
// take a running one over exits at once, saying so, before it contacts
// anything.
func TestLiveUpgradeFrontendsRefused(t *testing.T) {
	for _, fe := range []string{"iscsi", "blockdev"} {
		out, err := runTool(30*time.Second, testutilBinary(t), "engine", "controller", "vol", "--size", "4096",
			"--frontend", fe, "--replica", "tcp://127.0.0.1:1", "--upgrade-from", "127.0.0.1:1",
			"--listen", "127.0.0.1:"+strconv.Itoa(testutil.FreePort(t)))
		if err == nil || !strings.Contains(out, "live upgrade is not supported yet for frontend") || !strings.Contains(out, fe) {
			t.Fatalf("--frontend %s --upgrade-from: %v\n%s", fe, err, out)
		}
	}
}
