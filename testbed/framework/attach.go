package framework

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// ErrFrontend is wrapped when a volume cannot be attached with the
// requested frontend (attached with another one, or not nbd/iscsi).
var ErrFrontend = errors.New("frontend")

// Endpoint is where an attached volume's frontend serves it.
type Endpoint struct {
	// Volume and Engine name the objects.
	Volume, Engine string
	// Node is where the engine runs; the URI is reachable inside that
	// node's namespaces (NodeExec).
	Node string
	// Frontend is "nbd" or "iscsi".
	Frontend longhorn.VolumeFrontend
	// URI is the engine's status.endpoint as a command inside the node
	// reaches it, e.g.
	// nbd+unix:///vol?socket=/var/run/longhorn/nbd/vol.sock (on a real
	// node the socket path is under /proc/PID/root of the instance-manager
	// container, NodeLocalPath) or
	// iscsi://10.100.1.5:10001/iqn.2019-10.io.longhorn:vol/1.
	URI string
	// Status is the engine's status.endpoint as the engine reports it.
	Status string
}

// Attach asks for the volume on node through a longhorn-api attachment
// ticket named ticketID on its VolumeAttachment (as the UI and API do),
// first setting spec.frontend to fe ("nbd" or "iscsi") if the volume is
// detached with another frontend. It waits up to timeout until the volume
// is attached on node, the ticket is satisfied and the engine reports an
// endpoint, and returns that endpoint.
func (c *Cluster) Attach(ctx context.Context, volume, node, ticketID string, fe longhorn.VolumeFrontend, timeout time.Duration) (Endpoint, error) {
	if fe != longhorn.VolumeFrontendNBD && fe != longhorn.VolumeFrontendISCSI {
		return Endpoint{}, fmt.Errorf("%w %q: want nbd or iscsi (the frontends with user-space clients here)", ErrFrontend, fe)
	}
	deadline := time.Now().Add(timeout)
	v, err := c.Volume(ctx, volume)
	if err != nil {
		return Endpoint{}, err
	}
	if v.Spec.Frontend != fe {
		if v.Status.State != longhorn.VolumeStateDetached {
			return Endpoint{}, fmt.Errorf("%w: volume %s is %s with frontend %q; detach it before switching to %q", ErrFrontend, volume, v.Status.State, v.Spec.Frontend, fe)
		}
		if err := c.SetFrontend(ctx, volume, fe); err != nil {
			return Endpoint{}, err
		}
	}
	if err := c.setTicket(ctx, volume, ticketID, &longhorn.AttachmentTicket{
		ID: ticketID, Type: longhorn.AttacherTypeLonghornAPI, NodeID: node,
		Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: "false"},
	}, time.Until(deadline)); err != nil {
		return Endpoint{}, err
	}
	if _, err := c.WaitVolume(ctx, volume, time.Until(deadline), AttachedTo(node)); err != nil {
		return Endpoint{}, err
	}
	var ep Endpoint
	err = poll(ctx, time.Until(deadline), 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		va, err := c.LH.LonghornV1beta2().VolumeAttachments(Namespace).Get(ctx, volume, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if !longhorn.IsAttachmentTicketSatisfied(ticketID, va) {
			return false, "ticket " + ticketID + " not satisfied", nil
		}
		ep, err = c.Endpoint(ctx, volume)
		if err != nil {
			return false, err.Error(), nil
		}
		return ep.Frontend == fe, fmt.Sprintf("endpoint %q frontend %q, want %q", ep.URI, ep.Frontend, fe), nil
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("attach %s to %s: %w\n%s", volume, node, err, c.Dump(context.WithoutCancel(ctx), volume))
	}
	return ep, nil
}

// Detach removes attachment ticket ticketID and, when no other ticket is
// left, waits up to timeout until the volume is detached.
func (c *Cluster) Detach(ctx context.Context, volume, ticketID string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := c.setTicket(ctx, volume, ticketID, nil, timeout); err != nil {
		return err
	}
	va, err := c.LH.LonghornV1beta2().VolumeAttachments(Namespace).Get(ctx, volume, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("volume attachment %s: %w", volume, err)
	}
	if len(va.Spec.AttachmentTickets) > 0 {
		return nil
	}
	_, err = c.WaitVolume(ctx, volume, time.Until(deadline), StateIs(longhorn.VolumeStateDetached))
	return err
}

// setTicket sets (t != nil) or removes (t == nil) ticket id on the
// volume's VolumeAttachment, waiting for the object to exist.
func (c *Cluster) setTicket(ctx context.Context, volume, id string, t *longhorn.AttachmentTicket, timeout time.Duration) error {
	api := c.LH.LonghornV1beta2().VolumeAttachments(Namespace)
	err := poll(ctx, timeout, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		err := retryConflict(func() error {
			va, err := api.Get(ctx, volume, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if t == nil {
				if _, ok := va.Spec.AttachmentTickets[id]; !ok {
					return nil
				}
				delete(va.Spec.AttachmentTickets, id)
			} else {
				if va.Spec.AttachmentTickets == nil {
					va.Spec.AttachmentTickets = map[string]*longhorn.AttachmentTicket{}
				}
				va.Spec.AttachmentTickets[id] = t
			}
			_, err = api.Update(ctx, va, metav1.UpdateOptions{})
			return err
		})
		if IsNotFound(err) {
			return false, "no VolumeAttachment " + volume + " yet", nil
		}
		if webhookUnreachable(err) {
			return false, err.Error(), nil // retried until the timeout
		}
		return err == nil, "", err
	})
	if err != nil {
		return fmt.Errorf("attachment ticket %s of %s: %w", id, volume, err)
	}
	return nil
}

// Endpoint returns the endpoint of the volume's running engine. It fails
// when the volume has no engine with an endpoint (detached, or attached
// with the frontend disabled).
func (c *Cluster) Endpoint(ctx context.Context, volume string) (Endpoint, error) {
	es, err := c.LH.LonghornV1beta2().Engines(Namespace).List(ctx, metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + volume})
	if err != nil {
		return Endpoint{}, fmt.Errorf("engines of %s: %w", volume, err)
	}
	for _, e := range es.Items {
		if e.Status.CurrentState != longhorn.InstanceStateRunning || e.Status.Endpoint == "" {
			continue
		}
		t, err := ParseEndpoint(e.Status.Endpoint)
		if err != nil {
			return Endpoint{}, fmt.Errorf("engine %s: %w", e.Name, err)
		}
		uri := e.Status.Endpoint
		if t.Socket != "" {
			local, err := c.NodeLocalPath(ctx, e.Spec.NodeID, t.Socket)
			if err != nil {
				return Endpoint{}, fmt.Errorf("engine %s: %w", e.Name, err)
			}
			uri = strings.Replace(uri, "socket="+t.Socket, "socket="+local, 1)
		}
		return Endpoint{Volume: volume, Engine: e.Name, Node: e.Spec.NodeID, Frontend: t.Frontend, URI: uri, Status: e.Status.Endpoint}, nil
	}
	return Endpoint{}, fmt.Errorf("volume %s: no running engine with an endpoint (%d engines)", volume, len(es.Items))
}

// Replica is one replica of a volume as the control plane sees it.
type Replica struct {
	// Name of the Replica object; Node where it runs.
	Name, Node string
	// State is status.currentState (running, stopped, error, ...).
	State longhorn.InstanceState
	// Mode is the engine's view (RW, WO, ERR), "" when the engine does
	// not list the replica.
	Mode longhorn.ReplicaMode
	// Address is storageIP:port of the replica's data server.
	Address string
	// FailedAt is spec.failedAt (RFC 3339), "" for a replica never failed.
	FailedAt string
	// LastFailedAt is spec.lastFailedAt (RFC 3339): kept after a failed
	// replica is reused for rebuilding, when FailedAt is cleared.
	LastFailedAt string
	// DataDir is the replica's directory on its node's disk.
	DataDir string
}

// Replicas lists the volume's replicas sorted by name, with their modes
// from the volume's engine.
func (c *Cluster) Replicas(ctx context.Context, volume string) ([]Replica, error) {
	sel := metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + volume}
	rs, err := c.LH.LonghornV1beta2().Replicas(Namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("replicas of %s: %w", volume, err)
	}
	es, err := c.LH.LonghornV1beta2().Engines(Namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("engines of %s: %w", volume, err)
	}
	modes := map[string]longhorn.ReplicaMode{}
	for _, e := range es.Items {
		for n, m := range e.Status.ReplicaModeMap {
			modes[n] = m
		}
	}
	out := make([]Replica, 0, len(rs.Items))
	for _, r := range rs.Items {
		rep := Replica{Name: r.Name, Node: r.Spec.NodeID, State: r.Status.CurrentState, Mode: modes[r.Name],
			FailedAt: r.Spec.FailedAt, LastFailedAt: r.Spec.LastFailedAt, DataDir: r.Spec.DiskPath + "/replicas/" + r.Spec.DataDirectoryName}
		if r.Status.StorageIP != "" && r.Status.Port != 0 {
			rep.Address = fmt.Sprintf("%s:%d", r.Status.StorageIP, r.Status.Port)
		}
		out = append(out, rep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// HealthyReplicas counts running replicas the engine lists as RW.
func HealthyReplicas(rs []Replica) int {
	n := 0
	for _, r := range rs {
		if r.State == longhorn.InstanceStateRunning && r.Mode == longhorn.ReplicaModeRW {
			n++
		}
	}
	return n
}
