package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// Files of a cached layer directory.
const (
	layerFileName = "layer.tar.gz"
	layerInfoName = "layer.json"
)

// TarTree writes the tree under root to w as a tar stream in lexical order,
// with paths relative to root ("usr/bin/x", directories with a trailing
// slash), numeric owners, modes, modification times, symlinks, hard links
// (one file per inode, later names as links) and the security.capability
// extended attribute. Entries for which skip(rel) is true are left out (a
// skipped directory's contents too, but not the directory itself when only
// its children are skipped); files in empty are written with no contents.
// Device nodes and sockets are refused: the runtime provides /dev.
func TarTree(w io.Writer, root string, skip func(rel string) bool, empty map[string]bool) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return tarEntry(tw, p, rel, empty[rel], links)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// tarEntry writes one file system object.
func tarEntry(tw *tar.Writer, p, rel string, empty bool, links map[[2]uint64]string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no stat data", p)
	}
	target := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = os.Readlink(p); err != nil {
			return err
		}
	}
	if fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket) != 0 {
		return fmt.Errorf("%s: device node or socket in the layer tree", p)
	}
	hdr, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = rel, int(st.Uid), int(st.Gid), "", ""
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = fi.ModTime().Truncate(time.Second), time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if fi.Mode().IsRegular() && st.Nlink > 1 {
		id := [2]uint64{st.Dev, st.Ino}
		if first, seen := links[id]; seen {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			return tw.WriteHeader(hdr)
		}
		links[id] = rel
	}
	if capBytes := getCap(p); capBytes != nil {
		hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": string(capBytes)}
	}
	if empty && fi.Mode().IsRegular() {
		hdr.Size = 0
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || hdr.Size == 0 {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// getCap returns the security.capability attribute of p, or nil.
func getCap(p string) []byte {
	buf := make([]byte, 64)
	n, err := unix.Lgetxattr(p, "security.capability", buf)
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}

// writeLayerFile writes gzip(tar) produced by fill to path (through a
// temporary file) at the gzip level and returns its digests and size.
func writeLayerFile(path string, level int, fill func(io.Writer) error) (layerInfo, error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return layerInfo{}, err
	}
	defer os.Remove(tmp)
	compressed, uncompressed := sha256.New(), sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, compressed)}
	zw, err := gzip.NewWriterLevel(cw, level)
	if err != nil {
		f.Close()
		return layerInfo{}, err
	}
	if err := fill(io.MultiWriter(zw, uncompressed)); err != nil {
		f.Close()
		return layerInfo{}, err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return layerInfo{}, err
	}
	if err := f.Close(); err != nil {
		return layerInfo{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return layerInfo{}, err
	}
	return layerInfo{Digest: sum(compressed), DiffID: sum(uncompressed), Size: cw.n}, nil
}

func sum(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fileLayer is a gzip layer in a file whose digests are known (v1.Layer).
type fileLayer struct {
	path string
	info layerInfo
}

// loadFileLayer opens the layer of a cache directory; an error when either
// file is missing or the recorded size does not match the file.
func loadFileLayer(dir string) (*fileLayer, error) {
	b, err := os.ReadFile(filepath.Join(dir, layerInfoName))
	if err != nil {
		return nil, err
	}
	var info layerInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	path := filepath.Join(dir, layerFileName)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() != info.Size || info.Digest == "" || info.DiffID == "" {
		return nil, fmt.Errorf("%s: size %d, recorded %d", path, fi.Size(), info.Size)
	}
	return &fileLayer{path: path, info: info}, nil
}

func (l *fileLayer) Digest() (v1.Hash, error) { return v1.NewHash(l.info.Digest) }
func (l *fileLayer) DiffID() (v1.Hash, error) { return v1.NewHash(l.info.DiffID) }
func (l *fileLayer) Size() (int64, error)     { return l.info.Size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) {
	return types.OCILayer, nil
}
func (l *fileLayer) Compressed() (io.ReadCloser, error) { return os.Open(l.path) }

// Uncompressed is not needed to write an archive; it decompresses the file.
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return readCloser{zr, f}, nil
}

type readCloser struct {
	io.Reader
	f *os.File
}

func (r readCloser) Close() error { return r.f.Close() }
