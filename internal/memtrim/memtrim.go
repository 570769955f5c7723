// Package memtrim gives back the memory a long-running data-plane process
// (an engine or a replica) touched only while it started.
//
// What it is (measured by `make bench-scale`, issue 22): every engine and
// replica process runs the one `longhorn` binary, about 100 MB, and the Go
// runtime runs the init functions of every package linked into it (the
// Kubernetes client, the manager, the UI, ...). Those inits touch pages of
// the binary's text and read-only data all over the file, and the kernel maps
// file pages around each fault in large folios, so an idle replica showed
// about 42 MiB of file-backed RSS against 7 MiB of anonymous memory. The
// pages are the page cache's, shared by every process running the binary,
// but they count in each process's RSS, and each mapped page costs page
// tables.
//
// Trim drops those pages from this process's page tables with
// madvise(MADV_DONTNEED) on the binary's read-only mappings (after
// MADV_NOHUGEPAGE, so that a later fault maps small pages rather than a
// whole 2 MiB folio of the page cache) (the page cache
// keeps them; what the process needs again comes back with a minor fault),
// and returns the heap freed since start to the kernel
// (runtime/debug.FreeOSMemory). A mapping holding any anonymous page (a
// copy-on-write page, such as relocated data of a position-independent
// binary) is left alone: MADV_DONTNEED would discard its contents.
package memtrim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mapping is one entry of /proc/PID/smaps: an address range, its
// permissions ("r-xp"), the mapped file's path ("" for anonymous memory) and
// its resident and anonymous sizes in KiB.
type Mapping struct {
	Start, End uint64
	Perms      string
	Path       string
	RssKB      uint64
	AnonKB     uint64
}

// ParseSmaps reads /proc/PID/smaps (proc(5)): a header line per mapping
// ("start-end perms offset dev inode [path]") followed by "Key: value kB"
// lines. Errors: a malformed header line, or the reader's.
func ParseSmaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasSuffix(f[0], ":") { // "Rss:  123 kB"
			if len(out) == 0 || len(f) < 2 {
				continue
			}
			n, _ := strconv.ParseUint(f[1], 10, 64)
			switch f[0] {
			case "Rss:":
				out[len(out)-1].RssKB = n
			case "Anonymous:":
				out[len(out)-1].AnonKB = n
			}
			continue
		}
		if len(f) < 5 { // "VmFlags: ..." ends with ':' too; anything else is a header
			return nil, fmt.Errorf("memtrim: smaps line %q: not a mapping header", line)
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end < start {
			return nil, fmt.Errorf("memtrim: smaps line %q: bad address range", line)
		}
		m := Mapping{Start: start, End: end, Perms: f[1]}
		if len(f) > 5 {
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Trimmable returns the mappings of exe that Trim may drop: read-only
// (neither writable nor shared), with resident pages and no anonymous page.
func Trimmable(maps []Mapping, exe string) []Mapping {
	var out []Mapping
	for _, m := range maps {
		if m.Path != exe || len(m.Perms) < 4 || m.Perms[1] == 'w' || m.Perms[3] != 'p' {
			continue
		}
		if m.RssKB == 0 || m.AnonKB != 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Resident returns the KiB of this process's executable that Trim would
// drop now.
func Resident() (int, error) {
	_, kb, err := selfTrimmable()
	return kb, err
}

// selfTrimmable returns the trimmable mappings of this process and their
// resident KiB.
func selfTrimmable() ([]Mapping, int, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, 0, err
	}
	maps, err := ParseSmaps(f)
	_ = f.Close()
	if err != nil {
		return nil, 0, err
	}
	ms := Trimmable(maps, exe)
	var kb uint64
	for _, m := range ms {
		kb += m.RssKB
	}
	return ms, int(kb), nil
}

// Keep trims again, first after delay and then every interval, while at
// least minKB of the executable came back since (first requests, the
// protobuf registry's lazy set-up and the like fault pages back in, in
// large folios); it returns when ctx is done. A process under load whose
// hot code stays under minKB is left alone.
func Keep(ctx context.Context, delay, interval time.Duration, minKB int) {
	if Disabled() {
		return
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if kb, err := Resident(); err == nil && kb >= minKB {
			_, _ = Trim()
		}
		t.Reset(interval)
	}
}

// Disabled reports whether LONGHORN_MEMTRIM=off asks Trim to do nothing
// (for an A/B measurement of what it saves).
func Disabled() bool { return os.Getenv("LONGHORN_MEMTRIM") == "off" }

// Trim returns the heap freed so far to the kernel and drops the resident
// pages of this process's executable from its page tables (see the package
// comment). It returns how many KiB of the executable were resident before;
// errors (no /proc, madvise refused) leave the process as it was.
func Trim() (int, error) {
	if Disabled() {
		return 0, nil
	}
	debug.FreeOSMemory()
	ms, _, err := selfTrimmable()
	if err != nil {
		return 0, err
	}
	var kb uint64
	for _, m := range ms {
		// By address: the mapping is not Go memory, so no unsafe.Pointer.
		// MADV_NOHUGEPAGE first: the page cache may hold the binary in 2 MiB
		// folios, and without it a fault maps a whole one (FilePmdMapped).
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), unix.MADV_NOHUGEPAGE)
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), unix.MADV_DONTNEED); e != 0 {
			return int(kb), fmt.Errorf("memtrim: madvise %x-%x: %w", m.Start, m.End, e)
		}
		kb += m.RssKB
	}
	return int(kb), nil
}
