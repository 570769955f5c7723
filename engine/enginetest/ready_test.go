package enginetest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// TestEngineListensOnceFrontendIsUp: the instance manager takes an engine's
// listening port as "running" (a TCP health check, 100 ms apart), and the
// manager's engine monitor reads the endpoint an attach waits for right
// then. So the engine listens only once its replicas are connected and its
// frontend is up, as Longhorn's engine does: the first connection that
// succeeds finds the frontend up with its endpoint. When the engine
// listened first, the first poll found no endpoint and the attach waited
// one poll interval (2 s) more.
func TestEngineListensOnceFrontendIsUp(t *testing.T) {
	const size = 16 << 20
	dir := t.TempDir()
	var reps []string
	for i := range 2 {
		reps = append(reps, startReplica(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), size).addr)
	}
	e := &engineProc{vol: "vol", url: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)), sock: filepath.Join(t.TempDir(), "nbd.sock")}
	args := []string{"engine", "controller", e.vol, "--size", strconv.Itoa(size), "--listen", e.url,
		"--frontend", "nbd", "--nbd-listen", "unix:" + e.sock}
	for _, a := range reps {
		args = append(args, "--replica", a)
	}
	e.proc = startProc(t, "engine-"+e.vol, args...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", e.url, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if e.exited() || time.Now().After(deadline) {
			t.Fatalf("engine never listened: %v\n%s", err, e.logText())
		}
		time.Sleep(2 * time.Millisecond)
	}
	v, err := e.api().VolumeGet(context.Background(), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("VolumeGet right after the port accepted: %v", err)
	}
	if v.GetFrontendState() != "up" || v.GetEndpoint() == "" {
		t.Fatalf("at the first accepted connection: frontend state %q endpoint %q, want up with an endpoint", v.GetFrontendState(), v.GetEndpoint())
	}
	if v.GetReplicaCount() != int32(len(reps)) {
		t.Fatalf("at the first accepted connection: %d replicas, want %d", v.GetReplicaCount(), len(reps))
	}
}
