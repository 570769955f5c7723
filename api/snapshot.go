package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/datastore"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// The engine snapshot actions of an attached volume (Longhorn's
// snapshot* actions, forwarded to the volume's engine).
func init() {
	snapIn := ActionDef{Input: "snapshotInput", Output: "snapshot"}
	volumeActionTable[ActionSnapshotCreate] = volumeAction{(*Server).snapshotCreate, snapIn, SnapshotInput{}}
	volumeActionTable[ActionSnapshotGet] = volumeAction{(*Server).snapshotGet, snapIn, SnapshotInput{}}
	volumeActionTable[ActionSnapshotList] = volumeAction{(*Server).snapshotList, ActionDef{Output: "snapshotListOutput"}, nil}
	volumeActionTable[ActionSnapshotDelete] = volumeAction{(*Server).snapshotDelete, in("snapshotInput"), SnapshotInput{}}
	volumeActionTable[ActionSnapshotRevert] = volumeAction{(*Server).snapshotRevert, in("snapshotInput"), SnapshotInput{}}
	volumeActionTable[ActionSnapshotPurge] = volumeAction{(*Server).snapshotPurge, ActionDef{Output: "volume"}, nil}
}

// SnapshotOps runs the snapshot operations of an attached volume. The
// manager uses EngineSnapshots (the volume's engine through its instance
// manager's proxy); tests may use their own.
type SnapshotOps interface {
	// Create takes a snapshot (name "" lets the engine choose) and returns its name.
	Create(ctx context.Context, v *longhorn.Volume, name string, labels map[string]string) (string, error)
	// List returns the volume's snapshots by name, the head ("volume-head") included.
	List(ctx context.Context, v *longhorn.Volume) (map[string]*engineapi.Snapshot, error)
	// Delete marks a snapshot removed; a purge merges its data away.
	Delete(ctx context.Context, v *longhorn.Volume, name string) error
	// Revert makes snapshot name the volume's parent of a new head.
	Revert(ctx context.Context, v *longhorn.Volume, name string) error
	// Purge starts coalescing removed snapshots.
	Purge(ctx context.Context, v *longhorn.Volume) error
}

// ErrNoEngine is returned by EngineSnapshots when the volume has no running
// active engine (wrapped; the API answers 409).
var ErrNoEngine = errors.New("volume has no running engine")

// EngineSnapshots implements SnapshotOps with the volume's active, running
// engine, reached through the proxy of the instance manager it runs in.
type EngineSnapshots struct {
	DS      *datastore.DataStore
	Handler *engineapi.Handler
}

// engine resolves the client of v's engine. Errors: ErrNoEngine (wrapped)
// when no active engine runs, or the instance manager is not known.
func (e EngineSnapshots) engine(ctx context.Context, v *longhorn.Volume) (engineapi.EngineClient, error) {
	engines, err := e.DS.ListEnginesByVolumeRO(ctx, v.Name)
	if err != nil {
		return nil, err
	}
	for _, eng := range engines {
		st := eng.Status
		if !eng.Spec.Active || st.CurrentState != longhorn.InstanceStateRunning || st.IP == "" || st.Port == 0 {
			continue
		}
		im, err := e.DS.GetInstanceManagerRO(ctx, st.InstanceManagerName)
		if err != nil {
			return nil, fmt.Errorf("engine %s: instance manager %q: %w", eng.Name, st.InstanceManagerName, err)
		}
		if im.Status.IP == "" {
			return nil, fmt.Errorf("engine %s: instance manager %s has no IP: %w", eng.Name, im.Name, ErrNoEngine)
		}
		return e.Handler.Engine(ctx, engineapi.IMAddressForIP(im.Status.IP), engineapi.EngineRef{
			Name: eng.Name, VolumeName: v.Name, Address: net.JoinHostPort(st.IP, strconv.Itoa(st.Port))})
	}
	return nil, fmt.Errorf("volume %s: %w", v.Name, ErrNoEngine)
}

// Create implements SnapshotOps.
func (e EngineSnapshots) Create(ctx context.Context, v *longhorn.Volume, name string, labels map[string]string) (string, error) {
	var out string
	err := e.call(ctx, v, func(c engineapi.EngineClient) (err error) {
		out, err = c.VolumeSnapshot(ctx, name, labels)
		return err
	})
	return out, err
}

// List implements SnapshotOps.
func (e EngineSnapshots) List(ctx context.Context, v *longhorn.Volume) (map[string]*engineapi.Snapshot, error) {
	var out map[string]*engineapi.Snapshot
	err := e.call(ctx, v, func(c engineapi.EngineClient) (err error) {
		out, err = c.SnapshotList(ctx)
		return err
	})
	return out, err
}

// Delete implements SnapshotOps.
func (e EngineSnapshots) Delete(ctx context.Context, v *longhorn.Volume, name string) error {
	return e.call(ctx, v, func(c engineapi.EngineClient) error { return c.SnapshotRemove(ctx, name) })
}

// Revert implements SnapshotOps.
func (e EngineSnapshots) Revert(ctx context.Context, v *longhorn.Volume, name string) error {
	return e.call(ctx, v, func(c engineapi.EngineClient) error { return c.SnapshotRevert(ctx, name) })
}

// Purge implements SnapshotOps. Setting disable-snapshot-purge refuses it
// (409), as Longhorn does during maintenance.
func (e EngineSnapshots) Purge(ctx context.Context, v *longhorn.Volume) error {
	if off, err := e.DS.GetSettingAsBool(ctx, types.SettingNameDisableSnapshotPurge); err == nil && off {
		return invalidState("snapshot purge of volume %s is disabled (setting %s is true)", v.Name, types.SettingNameDisableSnapshotPurge)
	}
	return e.call(ctx, v, func(c engineapi.EngineClient) error { return c.SnapshotPurge(ctx, true) })
}

// call runs fn with v's running engine. An engine that stops while fn runs
// (a detach racing the request) fails fn with whatever the dying process or
// its proxy answers (unavailable, not found); when, after a failure, v no
// longer has a running engine, the error wraps ErrNoEngine (409), the
// answer the request would have had a moment later, instead of a 500.
func (e EngineSnapshots) call(ctx context.Context, v *longhorn.Volume, fn func(engineapi.EngineClient) error) error {
	c, err := e.engine(ctx, v)
	if err != nil {
		return err
	}
	if err = fn(c); err == nil {
		return nil
	}
	engines, lerr := e.DS.ListEnginesByVolumeRO(ctx, v.Name)
	if lerr != nil {
		return err
	}
	return callError(v.Name, err, engines)
}

// callError is the error of an engine call that failed with err, given the
// volume's engines as known after the failure: wrapped ErrNoEngine when
// none of them runs any more, else err unchanged.
func callError(volume string, err error, engines []*longhorn.Engine) error {
	if engineRunning(engines) {
		return err
	}
	return fmt.Errorf("volume %s: the engine stopped during the request (%v): %w", volume, err, ErrNoEngine)
}

// engineRunning reports whether one of engines is active and meant to run
// and running: the engine a snapshot operation can use.
func engineRunning(engines []*longhorn.Engine) bool {
	for _, eng := range engines {
		if eng.Spec.Active && eng.Spec.DesireState == longhorn.InstanceStateRunning &&
			eng.Status.CurrentState == longhorn.InstanceStateRunning {
			return true
		}
	}
	return false
}

// engineHeadName is the volume head's entry in a snapshot list.
const engineHeadName = "volume-head"

// Snapshot is a snapshot resource (Longhorn's Snapshot model: the
// engine's snapshot info and the checksum of its Snapshot object).
type Snapshot struct {
	Resource
	Name        string            `json:"name"`
	Parent      string            `json:"parent"`
	Children    map[string]bool   `json:"children"`
	Removed     bool              `json:"removed"`
	UserCreated bool              `json:"usercreated"`
	Created     string            `json:"created"`
	Size        string            `json:"size"`
	Labels      map[string]string `json:"labels"`
	Checksum    string            `json:"checksum"`
}

func snapshotResource(s *engineapi.Snapshot) Snapshot {
	children, labels := s.Children, s.Labels
	if children == nil {
		children = map[string]bool{}
	}
	if labels == nil {
		labels = map[string]string{}
	}
	return Snapshot{Resource: Resource{ID: s.Name, Type: "snapshot", Links: map[string]string{}, Actions: map[string]string{}},
		Name: s.Name, Parent: s.Parent, Children: children, Removed: s.Removed, UserCreated: s.UserCreated,
		Created: s.Created, Size: strconv.FormatInt(s.Size, 10), Labels: labels}
}

// SnapshotInput is the body of snapshotCreate/Get/Delete/Revert and
// snapshotBackup (which alone reads backupMode: "", full, incremental).
type SnapshotInput struct {
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels"`
	BackupMode string            `json:"backupMode"`
}

// snapshots returns the configured SnapshotOps or a 503.
func (s *Server) snapshots() (SnapshotOps, error) {
	if s.opts.Snapshots == nil {
		return nil, newError(http.StatusServiceUnavailable, CodeServerError, "snapshot operations need an engine client; none is configured")
	}
	return s.opts.Snapshots, nil
}

// snapshotErr maps ErrNoEngine and the engine's refusals to client errors:
// a refused precondition or a name in use is 409, a malformed request 400, a
// missing snapshot 404; anything else stays a server error.
func snapshotErr(err error) error {
	switch {
	case errors.Is(err, ErrNoEngine):
		return invalidState("%v", err)
	case engineapi.Code(err) == codes.FailedPrecondition, engineapi.IsAlreadyExists(err):
		return newError(http.StatusConflict, CodeInvalidState, "%s", engineMessage(err))
	case engineapi.IsInvalidArgument(err):
		return newError(http.StatusBadRequest, CodeInvalidInput, "%s", engineMessage(err))
	case engineapi.IsNotFound(err):
		return newError(http.StatusNotFound, CodeNotFound, "%s", engineMessage(err))
	}
	return err
}

// engineMessage is the engine's own message of a gRPC error.
func engineMessage(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Message()
	}
	return err.Error()
}

func (s *Server) snapshotInput(r *http.Request, nameRequired bool) (SnapshotInput, SnapshotOps, error) {
	var in SnapshotInput
	if err := decodeBody(r, &in); err != nil {
		return in, nil, err
	}
	if nameRequired && in.Name == "" {
		return in, nil, invalidInput("name", "is required: the snapshot")
	}
	ops, err := s.snapshots()
	return in, ops, err
}

func (s *Server) snapshotCreate(ctx context.Context, r *http.Request, _ urls, v *longhorn.Volume) (int, any, error) {
	in, ops, err := s.snapshotInput(r, false)
	if err != nil {
		return 0, nil, err
	}
	if in.Name != "" {
		snaps, err := ops.List(ctx, v)
		if err != nil {
			return 0, nil, snapshotErr(err)
		}
		if _, taken := snaps[in.Name]; taken || in.Name == engineHeadName {
			return 0, nil, newError(http.StatusConflict, CodeInvalidState, "snapshot %q already exists on volume %s: pick another name", in.Name, v.Name)
		}
	}
	name, err := ops.Create(ctx, v, in.Name, in.Labels)
	if err != nil {
		return 0, nil, snapshotErr(err)
	}
	return s.snapshotGetByName(ctx, ops, v, name)
}

func (s *Server) snapshotGetByName(ctx context.Context, ops SnapshotOps, v *longhorn.Volume, name string) (int, any, error) {
	snaps, err := ops.List(ctx, v)
	if err != nil {
		return 0, nil, snapshotErr(err)
	}
	snap, ok := snaps[name]
	if !ok {
		return 0, nil, newError(http.StatusNotFound, CodeNotFound, "volume %s has no snapshot %q", v.Name, name)
	}
	return http.StatusOK, snapshotResource(snap), nil
}

func (s *Server) snapshotList(ctx context.Context, _ *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	ops, err := s.snapshots()
	if err != nil {
		return 0, nil, err
	}
	snaps, err := ops.List(ctx, v)
	if err != nil {
		return 0, nil, snapshotErr(err)
	}
	out := make([]Snapshot, 0, len(snaps))
	for _, sn := range snaps {
		out = append(out, snapshotResource(sn))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return http.StatusOK, u.newCollection("snapshot", "volumes/"+v.Name+"/snapshots", out), nil
}

func (s *Server) snapshotGet(ctx context.Context, r *http.Request, _ urls, v *longhorn.Volume) (int, any, error) {
	in, ops, err := s.snapshotInput(r, true)
	if err != nil {
		return 0, nil, err
	}
	return s.snapshotGetByName(ctx, ops, v, in.Name)
}

func (s *Server) snapshotDelete(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	in, ops, err := s.snapshotInput(r, true)
	if err != nil {
		return 0, nil, err
	}
	if err := ops.Delete(ctx, v, in.Name); err != nil {
		return 0, nil, snapshotErr(err)
	}
	return s.volumeOK(ctx, u, v)
}

// snapshotRevert needs the volume attached in maintenance mode (frontend
// disabled), as in Longhorn: reverting under a mounted filesystem corrupts it.
func (s *Server) snapshotRevert(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	in, ops, err := s.snapshotInput(r, true)
	if err != nil {
		return 0, nil, err
	}
	if !v.Spec.DisableFrontend && !v.Status.FrontendDisabled {
		return 0, nil, invalidState("volume %s must be attached in maintenance mode (disableFrontend) to revert", v.Name)
	}
	if err := ops.Revert(ctx, v, in.Name); err != nil {
		return 0, nil, snapshotErr(err)
	}
	return s.volumeOK(ctx, u, v)
}

func (s *Server) snapshotPurge(ctx context.Context, _ *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	ops, err := s.snapshots()
	if err != nil {
		return 0, nil, err
	}
	if err := ops.Purge(ctx, v); err != nil {
		return 0, nil, snapshotErr(err)
	}
	return s.volumeOK(ctx, u, v)
}
