package controller

import (
	"context"

	"github.com/longhorn-go/longhorn/engineapi"
)

// instanceAPI is what the controllers use of the data plane: the node's
// instance manager (processes) and an engine's proxy (volume, replicas,
// snapshots). Production wraps *engineapi.Handler (handlerAPI); the fixture
// tests give a fake that keeps instances in memory.
type instanceAPI interface {
	InstanceManager(ctx context.Context, im engineapi.IMAddress) (instanceManagerClient, error)
	Engine(ctx context.Context, im engineapi.IMAddress, e engineapi.EngineRef) (engineapi.EngineClient, error)
	// Ping checks the instance manager now (and its proxy, when it has
	// one); a failure drops its connections, so the next use dials again.
	Ping(ctx context.Context, im engineapi.IMAddress) (engineapi.APIVersions, error)
}

// instanceManagerClient is the part of *engineapi.InstanceManagerClient the
// controllers call. Errors keep the gRPC status (engineapi.IsNotFound,
// engineapi.IsAlreadyExists).
type instanceManagerClient interface {
	InstanceCreate(ctx context.Context, spec engineapi.InstanceSpec) (*engineapi.Instance, error)
	InstanceDelete(ctx context.Context, name string, typ engineapi.InstanceType, uuid string) (*engineapi.Instance, error)
	InstanceGet(ctx context.Context, name string, typ engineapi.InstanceType) (*engineapi.Instance, error)
	InstanceList(ctx context.Context) (map[string]*engineapi.Instance, error)
	InstanceWatch(ctx context.Context) (instanceWatcher, error)
	Versions() engineapi.APIVersions
}

// instanceWatcher is an InstanceWatch stream: Recv blocks for the next
// change; after an error the stream is over.
type instanceWatcher interface {
	Recv() (*engineapi.Instance, error)
}

// handlerAPI adapts *engineapi.Handler to instanceAPI.
type handlerAPI struct{ h *engineapi.Handler }

func (a handlerAPI) InstanceManager(ctx context.Context, im engineapi.IMAddress) (instanceManagerClient, error) {
	c, err := a.h.InstanceManager(ctx, im)
	if err != nil {
		return nil, err
	}
	return imClientAdapter{c}, nil
}

func (a handlerAPI) Ping(ctx context.Context, im engineapi.IMAddress) (engineapi.APIVersions, error) {
	return a.h.Ping(ctx, im)
}

func (a handlerAPI) Engine(ctx context.Context, im engineapi.IMAddress, e engineapi.EngineRef) (engineapi.EngineClient, error) {
	return a.h.Engine(ctx, im, e)
}

// imClientAdapter gives InstanceWatch the interface result type.
type imClientAdapter struct {
	*engineapi.InstanceManagerClient
}

func (c imClientAdapter) InstanceWatch(ctx context.Context) (instanceWatcher, error) {
	w, err := c.InstanceManagerClient.InstanceWatch(ctx)
	if err != nil {
		return nil, err
	}
	return w, nil
}
