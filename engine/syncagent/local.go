package syncagent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// Local transfers, part of the packed extension: a receiver of ours also
// answers open with LocalFileHeader, naming its file as
// "<boot id> <device> <inode> <absolute path>". A sender on the same
// kernel (same boot id) that can open that path as the same file (same
// device and inode) and whose own file has the same base name (a rebuild
// sends each file to its namesake) writes the file itself, with the packed
// plan: it reads the receiver's extent map and compares bytes directly,
// block by block (diffBlock), and through its own descriptor punches the
// source's holes and writes only the blocks that differ; it tells the receiver
// what it did with writePacked requests without data (LocalBytesHeader:
// bytes written, SkippedHeader: bytes found equal), which the receiver
// paces and counts as its progress. The receiver's close still syncs the
// file (an fsync covers every descriptor's writes). So two replicas on one
// node (one instance manager) skip the HTTP copy of every byte. A local
// copy does not hash the snapshot on the way (a third of its CPU): both
// agents hash their file after the transfer, in the background
// (Agent.hashLater), so the replica leaves WO sooner.
const (
	extLocal = "local"
	// LocalFileHeader names the receiver's file for a local transfer.
	LocalFileHeader = "X-Ssync-Local-File"
	// LocalBytesHeader is the number of bytes of a writePacked's interval
	// the sender wrote into the file itself (decimal).
	LocalBytesHeader = "X-Ssync-Local-Bytes"
)

// noLocal turns local transfers off (tests of the HTTP path).
var noLocal bool

// bootID is this kernel's boot id ("" when unknown: no local transfers).
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}()

// localFileValue renders f (open at path) as a LocalFileHeader value, ""
// when it cannot be told.
func localFileValue(f *os.File, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil || bootID == "" {
		return ""
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%s %d %d %s", bootID, st.Dev, st.Ino, abs)
}

// localFile is a parsed LocalFileHeader.
type localFile struct {
	boot     string
	dev, ino uint64
	path     string
}

// parseLocalFile parses a LocalFileHeader value: a boot id without
// spaces, decimal device and inode numbers, and an absolute path.
func parseLocalFile(v string) (localFile, error) {
	parts := strings.SplitN(v, " ", 4)
	if len(parts) != 4 {
		return localFile{}, fmt.Errorf("ssync: %s %q: want <boot id> <device> <inode> <path>", LocalFileHeader, v)
	}
	dev, err1 := strconv.ParseUint(parts[1], 10, 64)
	ino, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || parts[0] == "" || !filepath.IsAbs(parts[3]) {
		return localFile{}, fmt.Errorf("ssync: %s %q: bad device, inode, boot id or path", LocalFileHeader, v)
	}
	return localFile{boot: parts[0], dev: dev, ino: ino, path: parts[3]}, nil
}

// openLocal opens the receiver's file named by the LocalFileHeader value v
// for writing when it is the same file on this kernel and has the base
// name of src, the file being sent, a snapshot disk file; nil otherwise.
// (The receiver's word picks the file this process writes: it must be a
// regular file named as the snapshot sent, never a head or other file.)
func openLocal(v, src string) *os.File {
	lf, err := parseLocalFile(v)
	if err != nil || noLocal || lf.boot != bootID || filepath.Base(lf.path) != filepath.Base(src) || !isSnapshotDisk(src) {
		return nil
	}
	f, err := os.OpenFile(lf.path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || uint64(st.Dev) != lf.dev || st.Ino != lf.ino ||
		st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil
	}
	return f
}

// diffBlock is the unit a local transfer compares in: the replica's block,
// the smallest write a client makes. A remote transfer compares whole
// pieces (compareChunk) by checksum; a local one reads the receiver's
// bytes anyway, so it writes only the blocks that differ (a client's 4 KiB
// write while a replica was away costs 4 KiB, not 64).
const diffBlock = 4096

// localDiff compares the compare pieces of ps (whose bytes are back to
// back in buf) with what dst holds (the plan made sure it holds them as
// data), diffBlock by diffBlock, and returns ps cut into runs that are
// each all equal or all different, with keep set for those to write:
// every piece that is not compared, and the runs that differ.
func localDiff(dst *os.File, ps []piece, buf []byte) ([]piece, []bool, error) {
	out := make([]piece, 0, len(ps))
	keep := make([]bool, 0, len(ps))
	tmp := bufpool.Get(compareChunk) // a compare piece is at most compareChunk (splitPieces)
	defer func() { bufpool.Put(tmp) }()
	off := int64(0)
	for _, p := range ps {
		src := buf[off : off+p.Length]
		off += p.Length
		if !p.compare {
			out, keep = append(out, p), append(keep, true)
			continue
		}
		if int64(len(tmp)) < p.Length {
			bufpool.Put(tmp)
			tmp = bufpool.Get(int(p.Length))
		}
		t := tmp[:p.Length]
		n, err := dst.ReadAt(t, p.Offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		for pos := int64(0); pos < p.Length; {
			end := min(pos+diffBlock, p.Length)
			differs := end > int64(n) || !bytes.Equal(t[pos:end], src[pos:end])
			if k := len(out) - 1; k >= 0 && keep[k] == differs && out[k].compare && out[k].End() == p.Offset+pos {
				out[k].Length += end - pos
			} else {
				out = append(out, piece{Extent: sparse.Extent{Offset: p.Offset + pos, Length: end - pos}, compare: true})
				keep = append(keep, differs)
			}
			pos = end
		}
	}
	return out, keep, nil
}

// writeLocal writes the runs exts (back to back in data) into dst and
// starts their write-back, as the receiver does with a writePacked.
func writeLocal(dst *os.File, exts []sparse.Extent, data []byte) error {
	return applyPacked(dst, packedRequest{ranges: exts}, data)
}
