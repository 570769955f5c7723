package backuptask

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/longhorn-go/longhorn/engine/rpcmeta"
)

// The proxy's engine identity reaches the replicas' sync agents without
// the engine's instance name (they would refuse it), with the volume name.
func TestAgentContextDropsEngineInstanceName(t *testing.T) {
	ctx := rpcmeta.WithIdentity(context.Background(), "vol1", "vol1-e-0")
	md, _ := metadata.FromOutgoingContext(agentContext(ctx))
	if got := md.Get(rpcmeta.InstanceNameKey); len(got) != 0 {
		t.Fatalf("instance-name %v still sent", got)
	}
	if got := md.Get(rpcmeta.VolumeNameKey); len(got) != 1 || got[0] != "vol1" {
		t.Fatalf("volume-name %v, want vol1", got)
	}
	orig, _ := metadata.FromOutgoingContext(ctx)
	if len(orig.Get(rpcmeta.InstanceNameKey)) != 1 {
		t.Fatal("the caller's metadata was changed")
	}
	if agentContext(context.Background()) == nil {
		t.Fatal("nil context")
	}
}
