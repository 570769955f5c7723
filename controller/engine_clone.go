package controller

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Cloning a snapshot of another volume into an engine's replicas (the
// engine side of Longhorn's volume clone): the volume controller sets the
// engine's spec.requestedDataSource to snap://<source>/<snapshot> once the
// target engine runs with its frontend down and the source engine runs and
// holds the snapshot; the engine controller then asks the target engine,
// through the instance manager's proxy, to clone the snapshot from a RW
// replica of the source engine into each of its RW replicas, and mirrors the
// replicas' clone status into status.cloneStatus, which the volume
// controller follows.

// cloneRetryInterval is how long the engine controller waits before it asks
// again for a clone whose start call failed (the source engine may have
// been restarting).
const cloneRetryInterval = 10 * time.Second

// Clone states the sync agent reports (engine/syncagent).
const (
	cloneStateInProgress = "in_progress"
	cloneStateComplete   = "complete"
	cloneStateError      = "error"
)

// cloneStart is the clone an engine controller last asked for.
type cloneStart struct {
	source string // the requested data source
	at     time.Time
	err    error // the start call's error, nil when the engine took it
}

// cloneEntry is one replica's clone status, whichever type carries it.
type cloneEntry struct {
	Addr, Snapshot, State, Error string
	Cloning                      bool
}

// cloneProgress reads the replicas' clone status for snapshot: cloning
// while one still copies, done when every replica holds it, else the
// failures (replica address and error, sorted) of the ones that failed
// on it. Pure.
func cloneProgress(snapshot string, es []cloneEntry) (cloning, done bool, failure string) {
	sort.Slice(es, func(i, j int) bool { return es[i].Addr < es[j].Addr })
	complete := 0
	var fails []string
	for _, e := range es {
		switch {
		case e.Cloning || (e.State == cloneStateInProgress && e.Snapshot == snapshot):
			cloning = true
		case e.State == cloneStateComplete && e.Snapshot == snapshot:
			complete++
		case e.Error != "" && e.Snapshot == snapshot:
			fails = append(fails, fmt.Sprintf("replica %s: %s", e.Addr, e.Error))
		}
	}
	if cloning {
		return true, false, ""
	}
	return false, len(es) > 0 && complete == len(es), strings.Join(fails, "; ")
}

func cloneEntriesOfAPI(in map[string]*engineapi.CloneStatus) []cloneEntry {
	out := make([]cloneEntry, 0, len(in))
	for a, s := range in {
		out = append(out, cloneEntry{Addr: a, Snapshot: s.SnapshotName, State: s.State, Error: s.Error, Cloning: s.IsCloning})
	}
	return out
}

func cloneEntriesOf(in map[string]*longhorn.SnapshotCloneStatus) []cloneEntry {
	out := make([]cloneEntry, 0, len(in))
	for a, s := range in {
		if s != nil {
			out = append(out, cloneEntry{Addr: a, Snapshot: s.SnapshotName, State: s.State, Error: s.Error, Cloning: s.IsCloning})
		}
	}
	return out
}

func cloneStatusOf(in map[string]*engineapi.CloneStatus) map[string]*longhorn.SnapshotCloneStatus {
	out := map[string]*longhorn.SnapshotCloneStatus{}
	for a, s := range in {
		out[a] = &longhorn.SnapshotCloneStatus{IsCloning: s.IsCloning, Error: s.Error, Progress: s.Progress, State: s.State,
			FromReplicaAddress: s.FromReplicaAddress, SnapshotName: s.SnapshotName}
	}
	return emptyToNil(out)
}

// reconcileClone carries out spec.requestedDataSource (see above): the
// replicas' status goes into status.cloneStatus once this controller has
// asked for the clone (an older attempt's status would read as this one's);
// the clone is asked for when no replica copies or holds the snapshot yet,
// and again cloneRetryInterval after a start call failed.
func (c *EngineController) reconcileClone(ctx context.Context, e *longhorn.Engine, obs *engineObservation) (Result, error) {
	ds := e.Spec.RequestedDataSource
	c.mu.Lock()
	last, started := c.clones[e.Name]
	if started && last.source != string(ds) {
		delete(c.clones, e.Name)
		started = false
	}
	c.mu.Unlock()
	if ds == "" {
		e.Status.CloneStatus = nil
		return Done, nil
	}
	src, snap, ok := ds.Parse()
	if !ok || snap == "" {
		return Done, nil // the volume controller asks only for snap://<volume>/<snapshot>
	}
	if obs == nil || obs.Err != "" || obs.CloneErr != "" || (started && !obs.At.After(last.at)) {
		return WaitShort, nil
	}
	cloning, done, _ := cloneProgress(snap, cloneEntriesOfAPI(obs.Clone))
	if started || cloning || done {
		e.Status.CloneStatus = cloneStatusOf(obs.Clone)
	} else {
		e.Status.CloneStatus = nil
	}
	switch {
	case cloning, done:
		return WaitShort, nil
	case started && last.err == nil:
		return WaitShort, nil // the volume controller reads the outcome
	case started && c.now().Sub(last.at) < cloneRetryInterval:
		return After(cloneRetryInterval - c.now().Sub(last.at)), nil
	}
	return WaitShort, c.startClone(ctx, e, src, snap)
}

// startClone asks the engine to clone snapshot snap of volume src from the
// source volume's running engine.
func (c *EngineController) startClone(ctx context.Context, e *longhorn.Engine, src, snap string) error {
	rec := cloneStart{source: string(e.Spec.RequestedDataSource), at: c.now()}
	defer func() {
		c.mu.Lock()
		c.clones[e.Name] = rec
		c.mu.Unlock()
	}()
	se, err := c.engineOfVolume(ctx, src)
	if err == nil && (se == nil || se.Status.CurrentState != longhorn.InstanceStateRunning || se.Status.IP == "") {
		err = fmt.Errorf("the engine of source volume %s does not run", src)
	}
	var cl engineapi.EngineClient
	if err == nil {
		cl, err = c.api.Engine(ctx, imAddressOfEngine(e), engineRef(e))
	}
	if err == nil {
		err = cl.SnapshotClone(ctx, engineapi.SnapshotCloneRequest{
			FromEngineAddress: net.JoinHostPort(se.Status.IP, strconv.Itoa(se.Status.Port)),
			FromVolumeName:    src, SnapshotName: snap})
	}
	if err != nil {
		rec.err = err
		c.recorder.Eventf(e, corev1.EventTypeWarning, "SnapshotCloneFailed", "Cloning snapshot %s of volume %s: %v (retrying in %s)", snap, src, err, cloneRetryInterval)
		return nil
	}
	c.recorder.Eventf(e, corev1.EventTypeNormal, "SnapshotCloneStarted", "Cloning snapshot %s of volume %s into the replicas of engine %s", snap, src, e.Name)
	return nil
}

// sooner returns the result that requeues first (Done is never).
func sooner(a, b Result) Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter <= b.RequeueAfter:
		return a
	}
	return b
}
