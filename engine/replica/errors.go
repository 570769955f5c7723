package replica

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error a Store method returns for a bad request wraps
// one of these (test with errors.Is) inside an *Error that names the
// operation, the field and the limit; such a request changes nothing on disk.
var (
	// ErrOutOfRange: offset/length outside [0, volume size).
	ErrOutOfRange = errors.New("out of range")
	// ErrInvalidSize: a volume size that is not a positive multiple of SectorSize.
	ErrInvalidSize = errors.New("invalid size")
	// ErrShrink: Expand to a size smaller than the current one.
	ErrShrink = errors.New("cannot shrink")
	// ErrInvalidName: a snapshot or file name outside the allowed alphabet.
	ErrInvalidName = errors.New("invalid name")
	// ErrSnapshotExists: a snapshot (volume-snap-NAME.img) with that name exists.
	ErrSnapshotExists = errors.New("snapshot already exists")
	// ErrNotFound: no disk (snapshot or head) with that name.
	ErrNotFound = errors.New("not found")
	// ErrIsHead: the operation does not apply to the volume head.
	ErrIsHead = errors.New("is the volume head")
	// ErrRemoved: revert to a snapshot marked removed.
	ErrRemoved = errors.New("snapshot is marked removed")
	// ErrNotRemoved: purge of a snapshot not marked removed.
	ErrNotRemoved = errors.New("snapshot is not marked removed")
	// ErrHasChildren: removal of a disk with more than one child without force.
	ErrHasChildren = errors.New("disk has more than one child")
	// ErrSnapshotCountLimit: snapshot-max-count reached.
	ErrSnapshotCountLimit = errors.New("snapshot count limit reached")
	// ErrSnapshotSizeLimit: snapshot-max-size would be exceeded.
	ErrSnapshotSizeLimit = errors.New("snapshot size limit reached")
	// ErrChainTooLong: the live chain already has MaxChainLength disks.
	ErrChainTooLong = errors.New("chain too long")
	// ErrExists: Create on a directory that already holds a replica.
	ErrExists = errors.New("replica already exists")
	// ErrNotExist: Open of a directory without a replica.
	ErrNotExist = errors.New("replica does not exist")
	// ErrCorrupt: the metadata on disk is inconsistent (broken chain,
	// unreadable JSON, missing data file).
	ErrCorrupt = errors.New("replica metadata corrupt")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("replica closed")
	// ErrInvalidOption: an Options field outside its range.
	ErrInvalidOption = errors.New("invalid option")
)

// Error describes a failed request: which operation, which field or object,
// and why. Err is one of the sentinels above (or an I/O error).
type Error struct {
	Op     string // "write", "snapshot", "expand", ...
	Field  string // "offset", "length", "size", "name", a disk file name ...
	Detail string // the value and the limit, human readable
	Err    error
}

func (e *Error) Error() string {
	s := "replica: " + e.Op
	if e.Field != "" {
		s += " " + e.Field
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the sentinel or the underlying I/O error.
func (e *Error) Unwrap() error { return e.Err }

func errf(op, field string, err error, format string, args ...any) error {
	return &Error{Op: op, Field: field, Err: err, Detail: fmt.Sprintf(format, args...)}
}
