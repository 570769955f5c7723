package backupstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"
)

// userNFS is the userspace NFSv3 client driver. The library's calls are not
// context-aware and may panic on a malformed reply; every call here runs in
// a goroutine bounded by ctx (closing the connection when ctx ends) and
// recovers panics into errors.
type userNFS struct {
	t      nfsTarget
	client *rpc.Client
	target *nfs.Target
	auth   rpc.Auth
	mu     sync.Mutex // serialises directory creation and renames
}

// nfsCall runs fn bounded by ctx; a panic in the library becomes an error.
func nfsCall[T any](ctx context.Context, d *userNFS, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				var zero T
				ch <- result{zero, fmt.Errorf("%w: %s: malformed NFS reply: %v", ErrUnavailable, d.t.url, p)}
			}
		}()
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func openUserNFS(ctx context.Context, t nfsTarget) (Driver, error) {
	nfsPort, err := t.option("port")
	if err != nil {
		return nil, err
	}
	mountPort, err := t.option("mountport")
	if err != nil {
		return nil, err
	}
	d := &userNFS{t: t, auth: rpc.NewAuthUnix("longhorn", 0, 0).Auth()}
	if _, err := nfsCall(ctx, d, func() (struct{}, error) { return struct{}{}, d.connect(nfsPort, mountPort) }); err != nil {
		d.Close()
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, t.url, err)
	}
	return d, nil
}

// dialAttempts bounds the retries of a dial whose local port was taken.
const dialAttempts = 10

// dial connects to program port (0 = ask the portmapper). The library binds
// a random local port (49152-65535 for the portmapper, 1-1023 as root) and
// retries a taken one only for the reserved range, so a collision with
// another connection's port (EADDRINUSE) is retried here.
func (d *userNFS) dial(prog uint32, vers uint32, port int) (*rpc.Client, error) {
	// The library trusts the peer's record marks (see maxRPCRecord).
	var err error
	if port != 0 {
		err = probeRPC(d.t.host, port, prog, vers)
	} else {
		err = probeRPC(d.t.host, portmapperPort, portmapperProg, portmapperVers)
	}
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < dialAttempts; attempt++ {
		var c *rpc.Client
		if port != 0 {
			c, err = nfs.DialServiceAtPort(d.t.host, port)
		} else {
			c, err = nfs.DialService(d.t.host, rpc.Mapping{Prog: prog, Vers: vers, Prot: rpc.IPProtoTCP})
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return c, err
		}
	}
	return nil, fmt.Errorf("%w (local port taken %d times)", err, dialAttempts)
}

func (d *userNFS) connect(nfsPort, mountPort int) error {
	mc, err := d.dial(nfs.MountProg, nfs.MountVers, mountPort)
	if err != nil {
		return fmt.Errorf("MOUNT service: %w", err)
	}
	fh, err := mountExport(mc, d.t.export, d.auth)
	mc.Close()
	if err != nil {
		return fmt.Errorf("mount %s: %w", d.t.export, err)
	}
	c, err := d.dial(nfs.Nfs3Prog, nfs.Nfs3Vers, nfsPort)
	if err != nil {
		return fmt.Errorf("NFS service: %w", err)
	}
	d.client = c
	tg, err := nfs.NewTargetWithClient(c, d.auth, fh, d.t.export, 0)
	if err != nil {
		return fmt.Errorf("NFS FSINFO: %w", err)
	}
	d.target = tg
	return nil
}

// mountExport calls MOUNTPROC3_MNT and returns the export's root handle.
func mountExport(c *rpc.Client, dirpath string, auth rpc.Auth) ([]byte, error) {
	type mountArgs struct {
		rpc.Header
		Dirpath string
	}
	res, err := c.Call(&mountArgs{
		Header:  rpc.Header{Rpcvers: 2, Prog: nfs.MountProg, Vers: nfs.MountVers, Proc: nfs.MountProc3MNT, Cred: auth, Verf: rpc.AuthNull},
		Dirpath: dirpath,
	})
	if err != nil {
		return nil, err
	}
	st, err := xdr.ReadUint32(res)
	if err != nil {
		return nil, err
	}
	if st != nfs.MNT3Ok {
		return nil, fmt.Errorf("MOUNT status %d (2 = no such export, 13 = access denied)", st)
	}
	return xdr.ReadOpaque(res)
}

func (d *userNFS) Kind() string { return KindNFS }
func (d *userNFS) URL() string  { return d.t.url }

func (d *userNFS) Close() error {
	if d.client != nil {
		d.client.Close()
	}
	return nil
}

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (d *userNFS) mapErr(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) || isStale(err):
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", p, err)
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrUnavailable) || err.Error() == "disconnected":
		return fmt.Errorf("%w: %s: %s: %v", ErrUnavailable, d.t.url, p, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// isStale reports NFS3ERR_STALE: the file handle a lookup just returned
// names a file removed (or renamed over) since, as a lock file of another
// writer that finished (RFC 1813 section 2.6).
func isStale(err error) bool {
	var e *nfs.Error
	return errors.As(err, &e) && e.ErrorNum == nfs.NFS3ErrStale
}

// staleRetries bounds the fresh lookups after NFS3ERR_STALE: a file renamed
// over between the lookup and the call is found again by a new lookup; one
// still stale after that is gone (mapErr: ErrNotFound).
const staleRetries = 3

// retryStale runs fn again while it fails with NFS3ERR_STALE, at most
// staleRetries times.
func retryStale[T any](fn func() (T, error)) func() (T, error) {
	return func() (T, error) {
		v, err := fn()
		for i := 0; i < staleRetries && isStale(err); i++ {
			v, err = fn()
		}
		return v, err
	}
}

func (d *userNFS) Stat(ctx context.Context, p string) (FileInfo, error) {
	fa, err := nfsCall(ctx, d, retryStale(func() (*nfs.Fattr, error) { return d.target.Getattr(clean(p)) }))
	if err != nil {
		return FileInfo{}, d.mapErr(p, err)
	}
	if fa.IsDir() {
		return FileInfo{}, fmt.Errorf("%w: %s is a directory", ErrNotFound, p)
	}
	return FileInfo{Size: fa.Size(), ModTime: fa.ModTime().UTC()}, nil
}

func (d *userNFS) Read(ctx context.Context, p string) (io.ReadCloser, error) {
	data, err := nfsCall(ctx, d, retryStale(func() ([]byte, error) {
		f, err := d.target.Open(clean(p))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(f)
	}))
	if err != nil {
		return nil, d.mapErr(p, err)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// mkdirAll creates every missing directory of dir.
func (d *userNFS) mkdirAll(dir string) error {
	cur := ""
	for _, c := range strings.Split(dir, "/") {
		if c == "" {
			continue
		}
		cur = path.Join(cur, c)
		if _, _, err := d.target.Lookup(cur); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if _, err := d.target.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// Write writes a temporary file with FILE_SYNC writes, commits it and
// renames it over p (NFSPROC3_RENAME replaces atomically).
func (d *userNFS) Write(ctx context.Context, p string, r io.Reader, size int64) error {
	data, err := io.ReadAll(io.LimitReader(r, size+1))
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if int64(len(data)) != size {
		return fmt.Errorf("write %s: got %d bytes, want %d", p, len(data), size)
	}
	cp := clean(p)
	dir, base := path.Split(cp)
	tmp := path.Join(dir, "."+base+".tmp-"+GenerateName("w"))
	_, err = nfsCall(ctx, d, func() (struct{}, error) {
		d.mu.Lock()
		err := d.mkdirAll(dir)
		d.mu.Unlock()
		if err != nil {
			return struct{}{}, err
		}
		f, err := d.target.OpenFile(tmp, 0o644)
		if err != nil {
			return struct{}{}, err
		}
		if _, err := f.Write(data); err != nil {
			_ = d.target.Remove(tmp)
			return struct{}{}, err
		}
		if err := f.Close(); err != nil {
			_ = d.target.Remove(tmp)
			return struct{}{}, err
		}
		if err := d.rename(tmp, cp); err != nil {
			_ = d.target.Remove(tmp)
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	return d.mapErr(p, err)
}

// rename calls NFSPROC3_RENAME (the library has no wrapper for it).
func (d *userNFS) rename(from, to string) error {
	fdir, fname := path.Split(from)
	tdir, tname := path.Split(to)
	_, ffh, err := d.target.Lookup(fdir)
	if err != nil {
		return err
	}
	_, tfh, err := d.target.Lookup(tdir)
	if err != nil {
		return err
	}
	type renameArgs struct {
		rpc.Header
		From nfs.Diropargs3
		To   nfs.Diropargs3
	}
	res, err := d.target.Call(&renameArgs{
		Header: rpc.Header{Rpcvers: 2, Prog: nfs.Nfs3Prog, Vers: nfs.Nfs3Vers, Proc: nfs.NFSProc3Rename, Cred: d.auth, Verf: rpc.AuthNull},
		From:   nfs.Diropargs3{FH: ffh, Filename: fname},
		To:     nfs.Diropargs3{FH: tfh, Filename: tname},
	})
	if err != nil {
		return err
	}
	st, err := xdr.ReadUint32(res)
	if err != nil {
		return err
	}
	return nfs.NFS3Error(st)
}

func (d *userNFS) List(ctx context.Context, dir string) ([]string, error) {
	ents, err := nfsCall(ctx, d, retryStale(func() ([]*nfs.EntryPlus, error) {
		if clean(dir) == "" {
			return d.target.ReadDirPlus(".")
		}
		return d.target.ReadDirPlus(clean(dir))
	}))
	if errors.Is(err, fs.ErrNotExist) || isStale(err) {
		return nil, nil
	}
	if err != nil {
		return nil, d.mapErr(dir, err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if n == "." || n == ".." || (strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-")) {
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

func (d *userNFS) Remove(ctx context.Context, p string) error {
	cp := clean(p)
	if cp == "" {
		return fmt.Errorf("%w: refusing to remove the target root", ErrInvalid)
	}
	_, err := nfsCall(ctx, d, func() (struct{}, error) { return struct{}{}, d.removeAll(ctx, cp) })
	if errors.Is(err, fs.ErrNotExist) || isStale(err) {
		return nil
	}
	return d.mapErr(p, err)
}

func (d *userNFS) removeAll(ctx context.Context, p string) error {
	fi, _, err := d.target.Lookup(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return d.target.Remove(p)
	}
	ents, err := d.target.ReadDirPlus(p)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Name() == "." || e.Name() == ".." {
			continue
		}
		if err := d.removeAll(ctx, path.Join(p, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return d.target.RmDir(p)
}
