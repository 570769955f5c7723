package backupstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Errors. Every error of this package wraps one of these; use errors.Is.
var (
	// ErrNotFound: the file, backup or volume does not exist in the store.
	ErrNotFound = errors.New("not found in the backupstore")
	// ErrInvalid: bad input (URL, name, parameter); the message names it.
	ErrInvalid = errors.New("invalid argument")
	// ErrCorrupt: a file in the store cannot be decoded or fails its checksum.
	ErrCorrupt = errors.New("corrupt backupstore data")
	// ErrUnavailable: the target cannot be reached or refused the credentials.
	ErrUnavailable = errors.New("backup target unavailable")
	// ErrLocked: a conflicting lock held the volume past the wait time.
	ErrLocked = errors.New("backup volume is locked")
	// ErrCanceled: the operation was canceled.
	ErrCanceled = errors.New("canceled")
)

// FileInfo describes one file of the store.
type FileInfo struct {
	Size    int64
	ModTime time.Time // the server's modification time (UTC)
}

// Driver is one kind of backup target. Paths are slash-separated and
// relative to the target root (they start with "backupstore/"). Every call
// honours ctx (deadline and cancellation). Missing files are ErrNotFound;
// connection and permission failures are ErrUnavailable.
type Driver interface {
	// Kind is the URL scheme: "s3", "nfs", "vfs".
	Kind() string
	// URL is the target URL the driver was opened with (without query).
	URL() string
	// Stat returns the size and modification time of a file.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// Read opens a file for reading; the caller closes it.
	Read(ctx context.Context, path string) (io.ReadCloser, error)
	// Write stores size bytes from r as the file at path, creating parent
	// directories; readers see either the old or the complete new file.
	Write(ctx context.Context, path string, r io.Reader, size int64) error
	// List returns the names of the entries directly under dir (files and
	// directories, without the dir prefix); a missing dir lists nothing.
	List(ctx context.Context, dir string) ([]string, error)
	// Remove deletes a file, or a directory with everything under it; a
	// missing path is not an error.
	Remove(ctx context.Context, path string) error
	// Close releases connections and mounts.
	Close() error
}

// Credential is the content of a backup target's credential Secret, with
// Longhorn's keys: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_ENDPOINTS, AWS_CERT (PEM), VIRTUAL_HOSTED_STYLE
// ("true"), HTTP_PROXY, HTTPS_PROXY, NO_PROXY.
type Credential map[string]string

// Credential keys (Longhorn's types.AWSAccessKey and friends).
const (
	AWSAccessKey       = "AWS_ACCESS_KEY_ID"
	AWSSecretKey       = "AWS_SECRET_ACCESS_KEY"
	AWSSessionToken    = "AWS_SESSION_TOKEN"
	AWSEndPoint        = "AWS_ENDPOINTS"
	AWSCert            = "AWS_CERT"
	VirtualHostedStyle = "VIRTUAL_HOSTED_STYLE"
	HTTPProxy          = "HTTP_PROXY"
	HTTPSProxy         = "HTTPS_PROXY"
	NoProxy            = "NO_PROXY"
)

// Target kinds (URL schemes).
const (
	KindS3  = "s3"
	KindNFS = "nfs"
	KindVFS = "vfs"
)

// OpenDriver returns the driver for a target URL: s3://bucket@region/path
// (or s3://bucket/path), nfs://server:/export/path[?nfsOptions=...] and
// vfs:///local/dir (a directory, for tests and local use). A backup URL
// (with ?backup=&volume=) is accepted too. The driver checks that the target
// answers before it returns, so an unreachable target or wrong credentials
// fail here with ErrUnavailable, within ctx's deadline.
func OpenDriver(ctx context.Context, target string, cred Credential) (Driver, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("%w: backup target URL %q: %v", ErrInvalid, target, err)
	}
	q := u.Query()
	q.Del("backup")
	q.Del("volume")
	u.RawQuery = q.Encode()
	switch u.Scheme {
	case KindS3:
		return openS3(ctx, u, cred)
	case KindNFS:
		return openNFS(ctx, u)
	case KindVFS:
		return openVFS(u)
	case "cifs", "azblob":
		return nil, fmt.Errorf("%w: backup target URL %q: the %s target is not supported yet (supported: s3, nfs, vfs)",
			ErrInvalid, target, u.Scheme)
	default:
		return nil, fmt.Errorf("%w: backup target URL %q: unknown scheme %q (want s3://, nfs:// or vfs://)",
			ErrInvalid, target, u.Scheme)
	}
}

// TargetKind returns the scheme of a target URL, or an error naming the URL.
func TargetKind(target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("%w: backup target URL %q: want s3://, nfs:// or vfs://", ErrInvalid, target)
	}
	return strings.ToLower(u.Scheme), nil
}
