package manager_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/longhorn-go/longhorn/testbed/gdapi"
)

// waitObj polls get every 200 ms until cond holds or timeout passes.
func waitObj(t *testing.T, what string, timeout time.Duration, get func() (gdapi.Object, error), cond func(gdapi.Object) bool) gdapi.Object {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last gdapi.Object
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = get()
		if lastErr == nil && last != nil && cond(last) {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not reached in %v (last %v, err %v)", what, timeout, last, lastErr)
	return nil
}

// testRESTClient drives the real managers through /v1 with the
// schema-driven client (bootstrap from /v1, no paths): the cluster's nodes,
// instance managers, default engine image and events; then a volume made,
// attached, snapshotted, detached and deleted only through REST, its
// progress seen on the volumes WebSocket stream.
func testRESTClient(t *testing.T, c *cluster) {
	base := "http://" + c.nodes[0].ip + ":9500"
	cli, err := gdapi.New(base + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cli.List("node", nil)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("nodes %d %v", len(nodes), err)
	}
	for _, n := range nodes {
		for name, d := range n.Map("disks") {
			disk, _ := d.(map[string]any)
			if max, _ := disk["storageMaximum"].(float64); max <= 0 {
				t.Errorf("node %s disk %s storageMaximum %v (want a JSON number > 0)", n.ID(), name, disk["storageMaximum"])
			}
		}
	}
	waitObj(t, "default engine image deployed on 3 nodes", 60*time.Second, func() (gdapi.Object, error) {
		eis, err := cli.List("engineImage", nil)
		if err != nil || len(eis) != 1 {
			return nil, err
		}
		return eis[0], nil
	}, func(ei gdapi.Object) bool {
		return ei["default"] == true && ei.Str("state") == "deployed" && len(ei.Map("nodeDeploymentMap")) == 3
	})
	if ims, err := cli.List("instanceManager", nil); err != nil || len(ims) != 3 {
		t.Errorf("instance managers %d %v", len(ims), err)
	}

	ws, err := websocket.Dial("ws://"+c.nodes[0].ip+":9500/v1/ws/1s/volumes", "", base)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	states := make(chan string, 64)
	go func() {
		for {
			var msg string
			if websocket.Message.Receive(ws, &msg) != nil {
				close(states)
				return
			}
			states <- msg
		}
	}()

	const vol = "rest-client-vol"
	v, err := cli.Create("volume", map[string]any{"name": vol, "size": "64Mi", "numberOfReplicas": 2, "frontend": "nbd"})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (gdapi.Object, error) { return cli.ByID("volume", vol) }
	v = waitObj(t, "volume detached", 60*time.Second, get, func(o gdapi.Object) bool { return o.Str("state") == "detached" })
	if _, err := cli.Action(v, "attach", map[string]any{"hostId": c.nodes[0].name}); err != nil {
		t.Fatal(err)
	}
	v = waitObj(t, "volume attached healthy", 120*time.Second, get, func(o gdapi.Object) bool {
		return o.Str("state") == "attached" && o.Str("robustness") == "healthy"
	})
	// The stream shows it attached too (messages come at most once a second).
	streamDeadline := time.After(30 * time.Second)
	for sawAttached := false; !sawAttached; {
		select {
		case msg, ok := <-states:
			if !ok {
				t.Fatal("the volumes stream closed")
			}
			sawAttached = strings.Contains(msg, `"state":"attached"`) && strings.Contains(msg, `"name":"`+vol+`"`)
		case <-streamDeadline:
			t.Fatal("the volumes stream never showed the volume attached")
		}
	}
	checkMetrics(t, c, vol, 64<<20)
	checkIOMetrics(t, c, vol, c.nodes[0].name, c.nodes[0].ip, c.hostEndpoint(c.nodes[0].name, c.engineOf(vol).Status.Endpoint))
	if ctrls, _ := v["controllers"].([]any); len(ctrls) != 1 || !strings.HasPrefix(fmt.Sprint(ctrls[0].(map[string]any)["endpoint"]), "nbd") {
		t.Errorf("controllers %v", v["controllers"])
	}
	snap, err := cli.Action(v, "snapshotCreate", map[string]any{"name": "rest-snap"})
	if err != nil || snap.Str("name") != "rest-snap" {
		t.Fatalf("snapshotCreate: %v %v", snap, err)
	}
	list, err := cli.Action(v, "snapshotList", nil)
	found := false
	for _, s := range list.Data() {
		found = found || s.Str("name") == "rest-snap"
	}
	if err != nil || !found {
		t.Fatalf("snapshotList: %v %v", list, err)
	}
	if _, err := cli.Action(v, "snapshotDelete", map[string]any{"name": "rest-snap"}); err != nil {
		t.Fatal(err)
	}
	// A Snapshot object, as Longhorn's CSI driver makes one: taken by the
	// engine, ready to use, then deleted from the engine with the object.
	cr, err := cli.Action(v, "snapshotCRCreate", map[string]any{"name": "rest-cr-snap"})
	if err != nil || cr["readyToUse"] != true || cr.Str("creationTime") == "" {
		t.Fatalf("snapshotCRCreate: %v %v", cr, err)
	}
	if got, err := cli.Action(v, "snapshotCRGet", map[string]any{"name": "rest-cr-snap"}); err != nil || got["readyToUse"] != true {
		t.Fatalf("snapshotCRGet: %v %v", got, err)
	}
	if _, err := cli.Action(v, "snapshotCRDelete", map[string]any{"name": "rest-cr-snap"}); err != nil {
		t.Fatal(err)
	}
	waitObj(t, "snapshot removed in the engine", 30*time.Second, func() (gdapi.Object, error) {
		return cli.Action(v, "snapshotList", nil)
	}, func(list gdapi.Object) bool {
		for _, s := range list.Data() {
			if s.Str("name") == "rest-cr-snap" && s["removed"] != true {
				return false
			}
		}
		return true
	})
	if _, err := cli.Action(v, "snapshotPurge", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Action(v, "detach", map[string]any{"hostId": c.nodes[0].name}); err != nil {
		t.Fatal(err)
	}
	v = waitObj(t, "volume detached again", 60*time.Second, get, func(o gdapi.Object) bool { return o.Str("state") == "detached" })
	if err := cli.Delete(v); err != nil {
		t.Fatal(err)
	}
	waitObj(t, "volume gone", 60*time.Second, func() (gdapi.Object, error) {
		o, err := cli.ByID("volume", vol)
		if o == nil && err == nil {
			return gdapi.Object{"gone": true}, nil
		}
		return nil, err
	}, func(gdapi.Object) bool { return true })

	if events, err := cli.List("event", nil); err != nil || len(events) == 0 {
		t.Errorf("events %d %v", len(events), err)
	}
}
