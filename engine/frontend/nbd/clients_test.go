package nbd

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// These tests drive the server with real NBD clients (libnbd's nbdinfo and
// nbdcopy, qemu-io, qemu-img, fio's nbd engine) over a unix socket and TCP,
// against a file-backed Backend, and verify the data they read back and the
// bytes in the file.

const clientVolSize = 32 << 20

type transport struct {
	name   string
	listen func(t testing.TB) string
}

var transports = []transport{
	{"unix", func(t testing.TB) string { spec, _ := unixListen(t); return spec }},
	{"tcp", func(testing.TB) string { return "tcp:127.0.0.1:0" }},
}

// forEachTransport runs fn against a fresh file-backed server per transport.
func forEachTransport(t *testing.T, fn func(t *testing.T, uri string, be *fileBackend)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			be := newFileBackend(t, clientVolSize)
			s := startServer(t, Config{Listen: tr.listen(t), Description: "test volume"}, be.size, be)
			fn(t, s.Endpoint(), be)
		})
	}
}

// run executes a tool with a timeout and returns its combined output; a
// non-zero exit fails the test.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	path := testutil.RequireTool(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// fileBytes reads the backend file directly (not through NBD).
func fileBytes(t *testing.T, be *fileBackend) []byte {
	t.Helper()
	b, err := os.ReadFile(be.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sourceImage writes a volume-sized raw image: random data with a zero gap
// and a run of a repeated byte, so converters see data, zeroes and patterns.
func sourceImage(t *testing.T, size int) (path string, data []byte) {
	t.Helper()
	data = make([]byte, size)
	rand.New(rand.NewSource(42)).Read(data)
	clear(data[size/4 : size/2])
	for i := 3 * size / 4; i < 3*size/4+1<<20; i++ {
		data[i] = 0xee
	}
	path = filepath.Join(t.TempDir(), "src.raw")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestNbdinfo(t *testing.T) {
	forEachTransport(t, func(t *testing.T, uri string, be *fileBackend) {
		var info struct {
			Protocol   string `json:"protocol"`
			Structured bool   `json:"structured"`
			Exports    []struct {
				Name         string `json:"export-name"`
				Description  string `json:"description"`
				Size         int64  `json:"export-size"`
				ReadOnly     bool   `json:"is_read_only"`
				CanFlush     bool   `json:"can_flush"`
				CanFUA       bool   `json:"can_fua"`
				CanTrim      bool   `json:"can_trim"`
				CanZero      bool   `json:"can_zero"`
				CanMultiConn bool   `json:"can_multi_conn"`
				BlockMin     int64  `json:"block_size_minimum"`
				BlockPref    int64  `json:"block_size_preferred"`
				BlockMax     int64  `json:"block_size_maximum"`
			} `json:"exports"`
		}
		out := run(t, "nbdinfo", "--json", uri)
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			t.Fatalf("nbdinfo --json: %v\n%s", err, out)
		}
		if info.Protocol != "newstyle-fixed" || info.Structured || len(info.Exports) != 1 {
			t.Fatalf("nbdinfo: protocol %q structured %v exports %d\n%s", info.Protocol, info.Structured, len(info.Exports), out)
		}
		e := info.Exports[0]
		if e.Name != "vol" || e.Size != clientVolSize || e.ReadOnly || !e.CanFlush || !e.CanFUA ||
			!e.CanTrim || !e.CanZero || !e.CanMultiConn || e.Description != "test volume" {
			t.Fatalf("nbdinfo export: %+v\n%s", e, out)
		}
		if e.BlockMin != 1 || e.BlockPref != 4096 || e.BlockMax != DefaultMaxPayload {
			t.Fatalf("nbdinfo block sizes %d/%d/%d, want 1/4096/%d", e.BlockMin, e.BlockPref, e.BlockMax, DefaultMaxPayload)
		}
		if size := strings.TrimSpace(run(t, "nbdinfo", "--size", uri)); size != "33554432" {
			t.Fatalf("nbdinfo --size = %q", size)
		}
		if list := run(t, "nbdinfo", "--list", uri); !strings.Contains(list, "export=\"vol\"") && !strings.Contains(list, "export-name: vol") {
			t.Fatalf("nbdinfo --list does not show export vol:\n%s", list)
		}
	})
}

func TestQemuIO(t *testing.T) {
	forEachTransport(t, func(t *testing.T, uri string, be *fileBackend) {
		out := run(t, "qemu-io", "-f", "raw",
			"-c", "write -P 0xab 0 1M",
			"-c", "read -P 0xab 0 1M",
			"-c", "write -P 0x5a 1234567 3001", // unaligned offset and length
			"-c", "read -P 0x5a 1234567 3001",
			"-c", "read -P 0xab 1048576 0", // empty read
			"-c", "write -P 0x77 4M 4M",
			"-c", "write -z 5M 1M", // WRITE_ZEROES (may trim)
			"-c", "read -P 0 5M 1M",
			"-c", "write -f -P 0x33 9M 64k", // FUA
			"-c", "aio_write -P 0x44 10M 64k",
			"-c", "aio_write -P 0x45 11M 64k",
			"-c", "aio_flush",
			"-c", "read -P 0x44 10M 64k",
			"-c", "read -P 0x45 11M 64k",
			"-c", "discard 12M 1M",
			"-c", "flush",
			uri)
		if strings.Contains(out, "failed") || strings.Contains(out, "error") {
			t.Fatalf("qemu-io reported a failure:\n%s", out)
		}
		data := fileBytes(t, be)
		checkRun(t, data, 0, 1<<20, 0xab)
		checkRun(t, data, 1234567, 3001, 0x5a)
		checkRun(t, data, 4<<20, 1<<20, 0x77)
		checkRun(t, data, 5<<20, 1<<20, 0)
		checkRun(t, data, 6<<20, 2<<20, 0x77)
		checkRun(t, data, 9<<20, 64<<10, 0x33)
		checkRun(t, data, 10<<20, 64<<10, 0x44)
		checkRun(t, data, 11<<20, 64<<10, 0x45)
		checkRun(t, data, 12<<20, 1<<20, 0) // our file backend punches the hole
		if be.flushes.Load() == 0 {
			t.Fatal("no Backend.Flush after FUA write and flush")
		}
	})
}

// checkRun asserts data[off:off+n] is all b.
func checkRun(t *testing.T, data []byte, off, n int, b byte) {
	t.Helper()
	for i := off; i < off+n; i++ {
		if data[i] != b {
			t.Fatalf("byte %d = %#x, want %#x (run %d+%d)", i, data[i], b, off, n)
		}
	}
}

func TestQemuImgConvertCompare(t *testing.T) {
	forEachTransport(t, func(t *testing.T, uri string, be *fileBackend) {
		src, data := sourceImage(t, clientVolSize)
		// Dirty the region that must become zero, so zero writes are checked.
		if _, err := be.WriteAt(bytes.Repeat([]byte{0xff}, 1<<20), clientVolSize/4); err != nil {
			t.Fatal(err)
		}
		run(t, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, uri)
		out := run(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", src, uri)
		if !strings.Contains(out, "Images are identical") {
			t.Fatalf("qemu-img compare:\n%s", out)
		}
		if !bytes.Equal(fileBytes(t, be), data) {
			t.Fatal("backend file differs from the source image after qemu-img convert")
		}
	})
}

func TestNbdcopyRoundTrip(t *testing.T) {
	forEachTransport(t, func(t *testing.T, uri string, be *fileBackend) {
		src, data := sourceImage(t, clientVolSize)
		want := md5.Sum(data)
		for _, conns := range []string{"1", "4"} {
			run(t, "nbdcopy", "--connections="+conns, "--requests=16", src, uri)
			if got := md5.Sum(fileBytes(t, be)); got != want {
				t.Fatalf("connections=%s: backend md5 %x, want %x", conns, got, want)
			}
			dst := filepath.Join(t.TempDir(), "dst.raw")
			run(t, "nbdcopy", "--connections="+conns, uri, dst)
			back, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if got := md5.Sum(back); got != want {
				t.Fatalf("connections=%s: read-back md5 %x, want %x", conns, got, want)
			}
			// Scramble the volume so the next round really copies again.
			if _, err := be.WriteAt(bytes.Repeat([]byte{1}, 1<<20), 0); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestFioVerify(t *testing.T) {
	forEachTransport(t, func(t *testing.T, uri string, be *fileBackend) {
		for _, job := range [][]string{
			{"--rw=randwrite", "--bs=4k", "--iodepth=32", "--size=16m"},
			{"--rw=write", "--bs=128k", "--iodepth=8", "--size=32m"},
			{"--rw=randrw", "--bs=64k", "--iodepth=16", "--size=32m", "--numjobs=2", "--offset_increment=16m", "--size=16m"},
		} {
			args := append([]string{"--name=verify", "--ioengine=nbd", "--uri=" + uri,
				"--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--group_reporting",
				"--output-format=json", "--verify_state_save=0"}, job...)
			out := run(t, "fio", args...)
			var res struct {
				Jobs []struct {
					Error int `json:"error"`
				} `json:"jobs"`
			}
			if i := strings.IndexByte(out, '{'); i >= 0 {
				out = out[i:]
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Jobs) == 0 {
				t.Fatalf("fio %v: unparsable output (%v):\n%s", job, err, out)
			}
			for _, j := range res.Jobs {
				if j.Error != 0 {
					t.Fatalf("fio %v: job error %d\n%s", job, j.Error, out)
				}
			}
		}
	})
}
