// Package frontend defines the contract between the engine controller (which
// replicates block I/O to replicas) and the protocol servers that expose a volume
// to clients (nbd, iscsi). A frontend never talks to replicas: it only calls the
// Backend it was started with.
package frontend

import (
	"context"
	"errors"
)

// Backend is the volume as the engine controller presents it to a frontend.
// Offsets and lengths are in bytes. Any byte offset and length inside the
// volume is accepted: the controller turns requests that are not aligned to the
// engine's 4096-byte sector into aligned read-modify-write, serialized per
// sector, so frontends may pass 512-byte-granular requests straight through.
//
// Errors: ErrOutOfRange when off+len exceeds Size(); ErrNoBackend when no
// replica is usable (the volume is faulted). Any other error is an I/O error.
type Backend interface {
	// ReadAt fills p from volume offset off. It returns len(p) or an error.
	ReadAt(p []byte, off int64) (int, error)
	// WriteAt writes p at off to every RW and WO replica and returns once all
	// healthy replicas acknowledged.
	WriteAt(p []byte, off int64) (int, error)
	// UnmapAt discards length bytes at off (NBD TRIM, SCSI UNMAP). Data read
	// back from a discarded range is zeroes unless an older snapshot shows through.
	UnmapAt(length uint32, off int64) (int, error)
	// Flush makes every acknowledged write durable on every replica.
	Flush() error
	// Size returns the current volume size in bytes.
	Size() int64
}

// Frontend is one protocol server for one volume (Longhorn: frontend "nbd",
// "iscsi", ...). Implementations live in subpackages.
type Frontend interface {
	// FrontendName is the name used on the command line and in VolumeGet ("nbd", "iscsi").
	FrontendName() string
	// Startup starts serving volume name of the given size (bytes) from backend.
	// It returns once the listener accepts connections.
	Startup(ctx context.Context, name string, size int64, backend Backend) error
	// Shutdown stops serving; it closes client connections and waits for in-flight requests.
	Shutdown() error
	// Expand tells clients the volume now has size bytes (e.g. SCSI capacity
	// data changed unit attention; NBD clients see the new size on reconnect).
	Expand(size int64) error
	// Endpoint is what Longhorn shows as the engine endpoint, e.g.
	// "nbd+unix:///vol?socket=/run/vol.sock", "nbd://10.0.0.1:10809/vol" or
	// "iscsi://10.0.0.1:3260/iqn.2019-10.io.longhorn:vol/1". Empty when not started.
	Endpoint() string
	// State is "up" or "down" (Longhorn's frontend state).
	State() string
}

var (
	// ErrOutOfRange is returned for a request beyond the end of the volume.
	ErrOutOfRange = errors.New("frontend: request beyond end of volume")
	// ErrNoBackend is returned when no replica can serve the request.
	ErrNoBackend = errors.New("frontend: no healthy replica")
)
