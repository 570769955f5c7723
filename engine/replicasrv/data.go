package replicasrv

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/replica"
)

// errNoStore is returned on the data path while the replica is closed;
// Longhorn's replica answers "replica no longer exist" there.
var errNoStore = fmt.Errorf("replica no longer exist: %w", replica.ErrClosed)

// dataHandler serves dataconn requests from the current store.
type dataHandler struct{ s *Server }

func (h dataHandler) store() (*replica.Store, error) {
	if st := h.s.cur.Load(); st != nil {
		return st, nil
	}
	return nil, errNoStore
}

func (h dataHandler) ReadAt(p []byte, off int64) (int, error) {
	st, err := h.store()
	if err != nil {
		return 0, err
	}
	return st.ReadAt(p, off)
}

func (h dataHandler) WriteAt(p []byte, off int64) (int, error) {
	st, err := h.store()
	if err != nil {
		return 0, err
	}
	return st.WriteAt(p, off)
}

func (h dataHandler) UnmapAt(length uint32, off int64) (int, error) {
	st, err := h.store()
	if err != nil {
		return 0, err
	}
	return st.UnmapAt(length, off)
}

func (h dataHandler) Flush() error {
	st, err := h.store()
	if err != nil {
		return err
	}
	return st.Flush()
}

// errNoDirectRead answers a view request to a replica started with
// direct reads disabled.
var errNoDirectRead = errors.New("direct reads are disabled on this replica (resource limits)")

// ReadView gives the current store's read view, with a direct write slot
// when the store has one free (dataconn.ViewHandler).
func (h dataHandler) ReadView() (dataconn.ViewFiles, error) {
	if !h.s.directRead {
		return dataconn.ViewFiles{}, errNoDirectRead
	}
	st, err := h.store()
	if err != nil {
		return dataconn.ViewFiles{}, err
	}
	v, err := st.ReadView()
	if err != nil {
		return dataconn.ViewFiles{}, err
	}
	return dataconn.ViewFiles{Seq: v.Seq, Sectors: v.Sectors, SeqFd: v.SeqFd, IndexFd: v.IndexFd, Layers: v.Layers,
		Writable: v.WriteSlot >= 0, WriteSlot: v.WriteSlot, Release: v.Release}, nil
}

func (h dataHandler) PingResponse() error {
	_, err := h.store()
	return err
}

// syncReplica adapts the server to what the sync agent needs.
type syncReplica struct{ s *Server }

func (r syncReplica) FilePath(name string) (string, error) {
	if err := replica.ValidateFileName(name); err != nil {
		return "", err
	}
	return r.s.dir + string(os.PathSeparator) + name, nil
}

func (r syncReplica) Purge(ctx context.Context, progress func(disk string, done, total int64)) error {
	st := r.s.cur.Load()
	if st == nil {
		return errNoStore
	}
	return st.Purge(ctx, progress)
}

func itoa(n int) string { return fmt.Sprint(n) }
