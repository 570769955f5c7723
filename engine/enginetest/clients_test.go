package enginetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNBDClients(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d_replicas", n), func(t *testing.T) { nbdClients(t, n) })
	}
}

func nbdClients(t *testing.T, nrep int) {
	testutilTools(t, "nbdinfo", "qemu-io", "qemu-img", "nbdcopy")
	const size = 64 << 20
	dir := t.TempDir()
	var reps []*replicaProc
	for i := 0; i < nrep; i++ {
		reps = append(reps, startReplica(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), size))
	}
	e := startEngine(t, "vol", size, reps)
	if got := strings.TrimSpace(run(t, time.Minute, "nbdinfo", "--size", e.uri())); got != strconv.Itoa(size) {
		t.Fatalf("nbdinfo --size %q, want %d", got, size)
	}
	// qemu-io: patterns at aligned and unaligned offsets, read back verified.
	out := run(t, time.Minute, "qemu-io", "-f", "raw",
		"-c", "write -P 0xab 0 1M", "-c", "write -P 0xcd 1536 3000", "-c", "flush",
		"-c", "read -P 0xab 0 1536", "-c", "read -P 0xcd 1536 3000", "-c", "read -P 0xab 4536 1043040", e.uri())
	if strings.Contains(out, "Pattern verification failed") || strings.Count(out, "read ") != 3 {
		t.Fatalf("qemu-io:\n%s", out)
	}
	// qemu-img convert a file in, compare it back.
	src := fileOf(t, size, 1)
	run(t, 2*time.Minute, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, e.uri())
	if out := run(t, 2*time.Minute, "qemu-img", "compare", "-f", "raw", "-F", "raw", src, e.uri()); !strings.Contains(out, "identical") {
		t.Fatalf("qemu-img compare: %s", out)
	}
	// nbdcopy out to a file and in from another one.
	back := filepath.Join(t.TempDir(), "back.raw")
	run(t, 2*time.Minute, "nbdcopy", e.uri(), back)
	sameFile(t, src, back)
	src2 := fileOf(t, size, 2)
	run(t, 2*time.Minute, "nbdcopy", src2, e.uri())
	run(t, 2*time.Minute, "nbdcopy", e.uri(), back)
	sameFile(t, src2, back)
	// Every replica holds the same data.
	want, _ := os.ReadFile(src2)
	for _, r := range reps {
		if !bytes.Equal(r.readAll(size), want) {
			t.Fatalf("replica %s differs from what was copied in", r.addr)
		}
	}
}

func testutilTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		run(t, 10*time.Second, n, "--version")
	}
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	if ha, hb := sum(t, a), sum(t, b); ha != hb {
		t.Fatalf("%s (%s) and %s (%s) differ", a, ha, b, hb)
	}
}

func sum(t *testing.T, p string) string {
	t.Helper()
	d, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(d)
	return hex.EncodeToString(h[:])
}

// fioJob writes a fio job file for random 4k writes verified with crc32c.
func fioJob(t *testing.T, uri string, size int64, extra ...string) string {
	t.Helper()
	job := []string{"[global]", "ioengine=nbd", "uri=" + uri, "rw=randwrite", "bs=4k", "iodepth=16",
		fmt.Sprintf("size=%d", size), "verify=crc32c", "verify_fatal=1", "do_verify=1", "randrepeat=1",
		"verify_state_save=0", // fio would write *-verify.state into the package directory
		"[job0]"}
	job = append(job[:len(job)-1], append(extra, "[job0]")...)
	p := filepath.Join(t.TempDir(), "job.fio")
	if err := os.WriteFile(p, []byte(strings.Join(job, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFioKillReplicaAndRebuild: fio random writes with crc32c verification on
// 3 replicas; one replica is killed with SIGKILL in the middle. fio must see
// no error, the engine must show the replica ERR; a fresh replica is rebuilt
// in, and afterwards every replica holds the same data and fio's verify pass
// (reads spread over all replicas) still succeeds.
func TestFioKillReplicaAndRebuild(t *testing.T) {
	testutilTools(t, "fio")
	const size = 64 << 20
	dir := t.TempDir()
	var reps []*replicaProc
	for i := 0; i < 3; i++ {
		reps = append(reps, startReplica(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), size))
	}
	e := startEngine(t, "vol", size, reps)
	job := fioJob(t, e.uri(), 48<<20)
	done := make(chan string, 1)
	go func() {
		defer close(done)
		out, err := runErr(5*time.Minute, "fio", job)
		if err != nil {
			done <- fmt.Sprintf("fio failed: %v\n%s", err, out)
		}
	}()
	// Kill once fio has written a few MiB, so most writes come after the kill.
	waitAllocated(t, reps[1].dir, 4<<20, done)
	reps[1].kill()
	if msg := <-done; msg != "" {
		t.Fatal(msg)
	}
	m := e.modes()
	if m[reps[1].addr] != "ERR" || m[reps[0].addr] != "RW" || m[reps[2].addr] != "RW" {
		t.Fatalf("modes after kill: %v", m)
	}
	fresh := startReplica(t, filepath.Join(dir, "fresh"), size)
	e.ctl("rm-replica", reps[1].addr)
	if out := e.ctl("add-replica", "--wait", "--fast-sync", fresh.addr); !strings.Contains(out, "complete") {
		t.Fatalf("add-replica: %s", out)
	}
	if m := e.modes(); m[fresh.addr] != "RW" || len(m) != 3 {
		t.Fatalf("modes after rebuild: %v", m)
	}
	want := reps[0].readAll(size)
	for _, r := range []*replicaProc{reps[2], fresh} {
		if !bytes.Equal(r.readAll(size), want) {
			t.Fatalf("replica %s differs from %s after rebuild", r.addr, reps[0].addr)
		}
	}
	sameSnapshotFiles(t, reps[0].dir, fresh.dir)
	verify := fioJob(t, e.uri(), 48<<20, "verify_only=1")
	if out, err := runErr(5*time.Minute, "fio", verify); err != nil {
		t.Fatalf("fio verify after rebuild: %v\n%s", err, out)
	}
}

// waitAllocated waits until the head of the replica in dir holds at least n
// bytes, failing if fio ends first.
func waitAllocated(t *testing.T, dir string, n int64, fioDone <-chan string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		heads, _ := filepath.Glob(filepath.Join(dir, "volume-head-*.img"))
		var st syscall.Stat_t
		if len(heads) == 1 && syscall.Stat(heads[0], &st) == nil && st.Blocks*512 >= n {
			return
		}
		select {
		case msg := <-fioDone:
			t.Fatalf("fio ended before the replica was killed: %s", msg)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("fio wrote nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameSnapshotFiles checks that every volume-snap file of a is in b with the
// same bytes.
func sameSnapshotFiles(t *testing.T, a, b string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a, "volume-snap-*.img"))
	if len(files) == 0 {
		t.Fatalf("no snapshot files in %s", a)
	}
	for _, f := range files {
		sameFile(t, f, filepath.Join(b, filepath.Base(f)))
	}
}

// TestCrashAfterFlush: everything written before an acknowledged FLUSH is
// there after the engine and every replica are killed with SIGKILL.
func TestCrashAfterFlush(t *testing.T) {
	testutilTools(t, "qemu-io")
	const size = 32 << 20
	dir := t.TempDir()
	var reps []*replicaProc
	for i := 0; i < 3; i++ {
		reps = append(reps, startReplica(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), size))
	}
	e := startEngine(t, "vol", size, reps)
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 0 8M", "-c", "write -P 0xa5 12M 3M",
		"-c", "write -P 0x33 20971520 4096", "-c", "flush", e.uri())
	e.kill()
	for _, r := range reps {
		r.kill()
	}
	for _, r := range reps {
		r.restart()
	}
	e.restart()
	out := run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "read -P 0x5a 0 8M", "-c", "read -P 0xa5 12M 3M",
		"-c", "read -P 0x33 20971520 4096", "-c", "read -P 0 8M 4M", e.uri())
	if strings.Contains(out, "verification failed") {
		t.Fatalf("data lost after crash:\n%s", out)
	}
}

func runErr(timeout time.Duration, name string, args ...string) (string, error) {
	return runTool(timeout, name, args...)
}
