package engineapi

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// InstanceManagerClient calls one instance manager's InstanceService and
// ProcessManagerService. Get it from Handler.InstanceManager; it is cheap and
// may be kept for a reconcile. Safe for concurrent use.
type InstanceManagerClient struct {
	addr     string
	versions APIVersions
	entry    *imEntry
	pm       imrpc.ProcessManagerServiceClient
	inst     imrpc.InstanceServiceClient
}

// Address is the instance manager's "HOST:PORT".
func (c *InstanceManagerClient) Address() string { return c.addr }

// Versions is what the instance manager reported at the last check.
func (c *InstanceManagerClient) Versions() APIVersions { return c.versions }

func (c *InstanceManagerClient) fail(call string, err error) error {
	c.entry.suspect(err)
	return callError("instance manager "+c.addr, call, err)
}

// InstanceCreate starts an instance; it returns at once in state starting.
// Repeating a create with the same spec returns the existing instance; a
// different spec is AlreadyExists. Errors: InvalidArgument, AlreadyExists,
// ResourceExhausted (no ports left), Unavailable.
func (c *InstanceManagerClient) InstanceCreate(ctx context.Context, spec InstanceSpec) (*Instance, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.inst.InstanceCreate(ctx, &imrpc.InstanceCreateRequest{Spec: instanceSpecToRPC(spec)})
	if err != nil {
		return nil, c.fail("InstanceCreate "+spec.Name, err)
	}
	inst := instanceFromRPC(r)
	if !spec.Limits.IsZero() && inst.Spec.Limits != spec.Limits {
		// An instance manager older than resource limits drops the field:
		// the process must not run unlimited.
		_, _ = c.InstanceDelete(ctx, spec.Name, spec.Type, inst.Status.UUID)
		return nil, fmt.Errorf("instance manager %s does not enforce resource limits (it answered %+v for %+v): instance %s stopped; upgrade the instance manager or remove the limits",
			c.addr, inst.Spec.Limits, spec.Limits, spec.Name)
	}
	return inst, nil
}

// InstanceDelete stops an instance (SIGTERM, SIGKILL after the stop timeout)
// and frees its ports once it exited; it returns at once with Deleted set.
// typ and uuid may be empty; when set, a mismatch is NotFound / FailedPrecondition.
func (c *InstanceManagerClient) InstanceDelete(ctx context.Context, name string, typ InstanceType, uuid string) (*Instance, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.inst.InstanceDelete(ctx, &imrpc.InstanceDeleteRequest{Name: name, Type: string(typ), Uuid: uuid})
	if err != nil {
		return nil, c.fail("InstanceDelete "+name, err)
	}
	return instanceFromRPC(r), nil
}

// InstanceGet returns one instance; typ may be empty. Errors: NotFound.
func (c *InstanceManagerClient) InstanceGet(ctx context.Context, name string, typ InstanceType) (*Instance, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.inst.InstanceGet(ctx, &imrpc.InstanceGetRequest{Name: name, Type: string(typ)})
	if err != nil {
		return nil, c.fail("InstanceGet "+name, err)
	}
	return instanceFromRPC(r), nil
}

// InstanceList returns every instance by name.
func (c *InstanceManagerClient) InstanceList(ctx context.Context) (map[string]*Instance, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.inst.InstanceList(ctx, &imrpc.Empty{})
	if err != nil {
		return nil, c.fail("InstanceList", err)
	}
	out := make(map[string]*Instance, len(r.GetInstances()))
	for name, i := range r.GetInstances() {
		out[name] = instanceFromRPC(i)
	}
	return out, nil
}

// InstanceReplace starts spec under an existing name, waits until it runs,
// then stops the old run with terminateSignal ("" = SIGHUP). On failure the
// old run stays and the error is FailedPrecondition.
func (c *InstanceManagerClient) InstanceReplace(ctx context.Context, spec InstanceSpec, terminateSignal string) (*Instance, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.inst.InstanceReplace(ctx, &imrpc.InstanceReplaceRequest{Spec: instanceSpecToRPC(spec), TerminateSignal: terminateSignal})
	if err != nil {
		return nil, c.fail("InstanceReplace "+spec.Name, err)
	}
	return instanceFromRPC(r), nil
}

// InstanceLog calls fn for every line of the instance's log, oldest first,
// and stops at the first error fn returns.
func (c *InstanceManagerClient) InstanceLog(ctx context.Context, name string, typ InstanceType, fn func(line string) error) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	s, err := c.inst.InstanceLog(ctx, &imrpc.InstanceLogRequest{Name: name, Type: string(typ)})
	if err != nil {
		return c.fail("InstanceLog "+name, err)
	}
	for {
		l, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return c.fail("InstanceLog "+name, err)
		}
		if err := fn(l.GetLine()); err != nil {
			return err
		}
	}
}

// InstanceWatcher receives instance changes from InstanceWatch.
type InstanceWatcher struct {
	c *InstanceManagerClient
	s grpc.ServerStreamingClient[imrpc.InstanceResponse]
}

// Recv blocks for the next change. After an error the watch is over: list
// again and start a new watch (ResourceExhausted means the watcher fell
// behind, Unavailable that the instance manager is going away).
func (w *InstanceWatcher) Recv() (*Instance, error) {
	r, err := w.s.Recv()
	if err != nil {
		return nil, w.c.fail("InstanceWatch", err)
	}
	return instanceFromRPC(r), nil
}

// InstanceWatch starts a stream of instance changes and returns once the
// instance manager subscribed it: every change after the return is
// delivered (list after InstanceWatch to know the state it starts from). It
// runs until ctx ends, so ctx is not given DefaultCallTimeout; cancel it to
// stop watching.
func (c *InstanceManagerClient) InstanceWatch(ctx context.Context) (*InstanceWatcher, error) {
	s, err := c.inst.InstanceWatch(ctx, &imrpc.Empty{})
	if err != nil {
		return nil, c.fail("InstanceWatch", err)
	}
	if _, err := s.Header(); err != nil {
		return nil, c.fail("InstanceWatch", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, c.fail("InstanceWatch", err)
	}
	return &InstanceWatcher{c: c, s: s}, nil
}

// VersionGet asks the instance manager for its versions now.
func (c *InstanceManagerClient) VersionGet(ctx context.Context) (*APIVersions, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.inst.VersionGet(ctx, &imrpc.Empty{})
	if err != nil {
		return nil, c.fail("VersionGet", err)
	}
	v := versionsFromRPC(r)
	return &v, nil
}

// ProcessCreate starts a plain process (not an instance) through
// ProcessManagerService; same rules as InstanceCreate.
func (c *InstanceManagerClient) ProcessCreate(ctx context.Context, p Process) (*Process, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.pm.ProcessCreate(ctx, &imrpc.ProcessCreateRequest{Spec: &imrpc.ProcessSpec{
		Name: p.Name, Binary: p.Binary, Args: p.Args, PortCount: p.PortCount, PortArgs: p.PortArgs,
	}})
	if err != nil {
		return nil, c.fail("ProcessCreate "+p.Name, err)
	}
	return processFromRPC(r), nil
}

// ProcessDelete stops a process; uuid may be empty.
func (c *InstanceManagerClient) ProcessDelete(ctx context.Context, name, uuid string) (*Process, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.pm.ProcessDelete(ctx, &imrpc.ProcessDeleteRequest{Name: name, Uuid: uuid})
	if err != nil {
		return nil, c.fail("ProcessDelete "+name, err)
	}
	return processFromRPC(r), nil
}

// ProcessGet returns one process (instances included).
func (c *InstanceManagerClient) ProcessGet(ctx context.Context, name string) (*Process, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.pm.ProcessGet(ctx, &imrpc.ProcessGetRequest{Name: name})
	if err != nil {
		return nil, c.fail("ProcessGet "+name, err)
	}
	return processFromRPC(r), nil
}

// ProcessList returns every process by name, instances included.
func (c *InstanceManagerClient) ProcessList(ctx context.Context) (map[string]*Process, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := c.pm.ProcessList(ctx, &imrpc.ProcessListRequest{})
	if err != nil {
		return nil, c.fail("ProcessList", err)
	}
	out := make(map[string]*Process, len(r.GetProcesses()))
	for name, p := range r.GetProcesses() {
		out[name] = processFromRPC(p)
	}
	return out, nil
}
