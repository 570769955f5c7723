package backupstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// dirDriver stores the backupstore in a local directory: Longhorn's vfs://
// target, and the NFS driver on a kernel mount. Files are written through a
// temporary name in the same directory, fsynced and renamed, so readers see
// either the old or the new file.
type dirDriver struct {
	kind, url, root string
	closeFn         func() error
}

func openVFS(u *url.URL) (Driver, error) {
	if u.Host != "" || u.Path == "" || !strings.HasPrefix(u.Path, "/") {
		return nil, fmt.Errorf("%w: backup target URL %q: want vfs:///absolute/dir", ErrInvalid, u.String())
	}
	return newDirDriver(KindVFS, "vfs://"+u.Path, filepath.Clean(u.Path), nil)
}

func newDirDriver(kind, url, root string, closeFn func() error) (*dirDriver, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, url, err)
	}
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s: %s is not a directory", ErrUnavailable, url, root)
	}
	return &dirDriver{kind: kind, url: url, root: root, closeFn: closeFn}, nil
}

func (d *dirDriver) Kind() string { return d.kind }
func (d *dirDriver) URL() string  { return d.url }

// local maps a store path to the local file system, refusing paths that
// leave the root.
func (d *dirDriver) local(p string) (string, error) {
	clean := path.Clean("/" + p)
	if strings.Contains(p, "\x00") {
		return "", fmt.Errorf("%w: path %q", ErrInvalid, p)
	}
	return filepath.Join(d.root, filepath.FromSlash(clean)), nil
}

func mapFSError(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, p, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

func (d *dirDriver) Stat(ctx context.Context, p string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	lp, err := d.local(p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Stat(lp)
	if err != nil {
		return FileInfo{}, mapFSError(p, err)
	}
	if fi.IsDir() {
		return FileInfo{}, fmt.Errorf("%w: %s is a directory", ErrNotFound, p)
	}
	return FileInfo{Size: fi.Size(), ModTime: fi.ModTime().UTC()}, nil
}

func (d *dirDriver) Read(ctx context.Context, p string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lp, err := d.local(p)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(lp)
	if err != nil {
		return nil, mapFSError(p, err)
	}
	return f, nil
}

func (d *dirDriver) Write(ctx context.Context, p string, r io.Reader, size int64) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	lp, err := d.local(p)
	if err != nil {
		return err
	}
	dir := filepath.Dir(lp)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return mapFSError(p, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(lp)+".tmp-")
	if err != nil {
		return mapFSError(p, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, r)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if n != size {
		return fmt.Errorf("write %s: got %d bytes, want %d", p, n, size)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p, err)
	}
	if err := os.Rename(f.Name(), lp); err != nil {
		return mapFSError(p, err)
	}
	return nil
}

func (d *dirDriver) List(ctx context.Context, dir string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lp, err := d.local(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(lp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, mapFSError(dir, err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			continue // a write in progress
		}
		out = append(out, e.Name())
	}
	return out, nil
}

func (d *dirDriver) Remove(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	lp, err := d.local(p)
	if err != nil {
		return err
	}
	if lp == d.root {
		return fmt.Errorf("%w: refusing to remove the target root", ErrInvalid)
	}
	return mapFSError(p, os.RemoveAll(lp))
}

func (d *dirDriver) Close() error {
	if d.closeFn != nil {
		return d.closeFn()
	}
	return nil
}
