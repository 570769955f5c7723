package replicasrv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/longhorn-go/longhorn/engine/replica"
)

// SnapshotLayers returns the files of the chain ending at snapshot name,
// oldest first (sync.Cloner).
func (r syncReplica) SnapshotLayers(name string) ([]string, int64, error) {
	st := r.s.cur.Load()
	if st == nil {
		return nil, 0, errNoStore
	}
	disks := st.ListDisks()
	file := replica.SnapshotFileName(name)
	if _, ok := disks[file]; !ok {
		return nil, 0, fmt.Errorf("%w: snapshot %s", replica.ErrNotFound, name)
	}
	var chain []string
	seen := map[string]bool{}
	for cur := file; cur != ""; cur = disks[cur].Parent {
		if seen[cur] || len(chain) > replica.MaxChainLength {
			return nil, 0, fmt.Errorf("%w: parent loop at %s", replica.ErrCorrupt, cur)
		}
		if _, ok := disks[cur]; !ok {
			break // the backing file, or a parent outside the directory
		}
		seen[cur] = true
		chain = append(chain, filepath.Join(r.s.dir, cur))
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, st.Size(), nil
}

// HasDisk reports whether the replica has the disk file (sync.Cloner).
func (r syncReplica) HasDisk(file string) bool {
	st := r.s.cur.Load()
	if st == nil {
		return false
	}
	_, ok := st.ListDisks()[file]
	return ok
}

// FinishClone writes the .meta of a received snapshot (a root disk, user
// created, created now), reloads the replica and reverts it to the snapshot
// (Longhorn's postCloning). sync.Cloner.
func (r syncReplica) FinishClone(name string) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.cur.Load()
	if st == nil {
		return errNoStore
	}
	file := replica.SnapshotFileName(name)
	now := time.Now().UTC().Format(time.RFC3339)
	if err := writeMetaAtomic(s.dir, replica.MetaFileName(file), &replica.DiskMeta{Name: file, UserCreated: true, Created: now}); err != nil {
		return err
	}
	if err := st.Reload(); err != nil {
		return err
	}
	return st.Revert(name, now)
}

// writeMetaAtomic writes v as JSON (json.Encoder, as Longhorn) to dir/name
// through name.tmp, fsync and rename, then fsyncs the directory.
func writeMetaAtomic(dir, name string, v any) error {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return err
	}
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
