package engineapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
)

// directLocked returns the direct client of engine e, on a connection kept
// per engine address with the instance manager's entry (closed with it).
func (e *imEntry) directLocked(ref EngineRef) (EngineClient, error) {
	cc := e.engines[ref.Address]
	if cc == nil {
		var err error
		if cc, err = grpc.NewClient("passthrough:///"+ref.Address, dialOptions...); err != nil {
			return nil, fmt.Errorf("engine %s (%s): %w", ref.Name, ref.Address, err)
		}
		if e.engines == nil {
			e.engines = map[string]*grpc.ClientConn{}
		}
		e.engines[ref.Address] = cc
	}
	return newDirectEngineClient(cc, ref), nil
}

// Ping checks the instance manager at im now (VersionGet, and the proxy's
// Ping when it has one) and returns its versions. A failed check drops the
// connections (the next use dials again), so a dead proxy client is
// replaced by a new one; controllers call it on each sync of an instance
// manager.
func (h *Handler) Ping(ctx context.Context, im IMAddress) (APIVersions, error) {
	e, err := h.entry(ctx, im)
	if err != nil {
		return APIVersions{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cc == nil {
		if err := e.dialLocked(); err != nil {
			return APIVersions{}, err
		}
	}
	if err := h.checkLocked(ctx, e); err != nil {
		e.closeLocked()
		return APIVersions{}, err
	}
	return e.versions, nil
}

// Connections reports how many instance managers the handler holds
// connections to and how many times it dialed one (for tests and metrics:
// a dropped, dead client shows as a new dial).
func (h *Handler) Connections() (live int, dials int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.ims {
		e.mu.Lock()
		if e.cc != nil {
			live++
		}
		e.mu.Unlock()
	}
	return live, h.dials.Load()
}
