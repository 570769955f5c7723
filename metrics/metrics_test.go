package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// fakeSource serves fixed objects.
type fakeSource struct {
	vols    []*longhorn.Volume
	engines map[string][]*longhorn.Engine
	nodes   []*longhorn.Node
	ims     []*longhorn.InstanceManager
	backups []*longhorn.Backup
	snaps   map[string][]*longhorn.Snapshot
}

func (f fakeSource) ListVolumes(context.Context) ([]*longhorn.Volume, error) { return f.vols, nil }
func (f fakeSource) ListEngines(_ context.Context, v string) ([]*longhorn.Engine, error) {
	return f.engines[v], nil
}
func (f fakeSource) ListNodes(context.Context) ([]*longhorn.Node, error) { return f.nodes, nil }
func (f fakeSource) ListInstanceManagers(context.Context) ([]*longhorn.InstanceManager, error) {
	return f.ims, nil
}
func (f fakeSource) ListBackups(context.Context) ([]*longhorn.Backup, error) { return f.backups, nil }
func (f fakeSource) ListSnapshots(_ context.Context, v string) ([]*longhorn.Snapshot, error) {
	return f.snaps[v], nil
}

// scrape GETs /metrics from h and parses it with Prometheus' text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return fams
}

// value returns the sample of family name whose labels include want, and
// whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		if m.Counter != nil {
			return m.GetCounter().GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func testVolume(name, owner string) *longhorn.Volume {
	v := &longhorn.Volume{}
	v.Name = name
	v.Spec.Size = 64 << 20
	v.Status.OwnerID, v.Status.State, v.Status.Robustness = owner, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessDegraded
	v.Status.ActualSize = 12 << 20
	v.Status.KubernetesStatus = longhorn.KubernetesStatus{Namespace: "default", PVCName: "data-" + name}
	return v
}

func runningEngine(volume, addr string) *longhorn.Engine {
	e := &longhorn.Engine{}
	e.Name, e.Spec.VolumeName = volume+"-e-0", volume
	host, port, _ := strings.Cut(addr, ":")
	e.Status.CurrentState, e.Status.IP = longhorn.InstanceStateRunning, host
	e.Status.Port, _ = strconv.Atoi(port)
	return e
}

// The collectors report, with Longhorn's names and labels, the volumes this
// node owns (not the others), the node count, and this node's status and
// storage per disk.
func TestMetricsNamesAndLabels(t *testing.T) {
	node := &longhorn.Node{}
	node.Name, node.Spec.AllowScheduling = "n1", true
	node.Spec.Disks = map[string]longhorn.DiskSpec{"d1": {StorageReserved: 10}, "d2": {StorageReserved: 5}}
	node.Status.Conditions = []longhorn.Condition{{Type: "Ready", Status: longhorn.ConditionStatusTrue},
		{Type: "Schedulable", Status: longhorn.ConditionStatusFalse, Reason: "KubernetesNodeCordoned"}}
	node.Status.DiskStatus = map[string]*longhorn.DiskStatus{"d1": {StorageMaximum: 100, StorageAvailable: 60}, "d2": {StorageMaximum: 50, StorageAvailable: 50}}
	other := &longhorn.Node{}
	other.Name = "n2"
	src := fakeSource{vols: []*longhorn.Volume{testVolume("v1", "n1"), testVolume("v2", "n2")},
		engines: map[string][]*longhorn.Engine{"v1": {runningEngine("v1", "10.0.0.1:10000")}},
		nodes:   []*longhorn.Node{node, other}}
	var asked []string
	eng := func(_ context.Context, addr string) (engineapi.Metrics, error) {
		asked = append(asked, addr)
		return engineapi.Metrics{ReadThroughput: 1, WriteThroughput: 2, ReadIOPS: 3, WriteIOPS: 4, ReadLatency: 5, WriteLatency: 6}, nil
	}
	fams := scrape(t, Handler(Options{Source: src, NodeName: "n1", Engine: eng}))
	vl := map[string]string{"volume": "v1", "node": "n1", "pvc": "data-v1", "pvc_namespace": "default"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range vl {
			m[a] = b
		}
		return m
	}
	want := []struct {
		name   string
		labels map[string]string
		v      float64
	}{
		{"longhorn_volume_capacity_bytes", vl, 64 << 20},
		{"longhorn_volume_actual_size_bytes", vl, 12 << 20},
		{"longhorn_volume_state", with("state", "attached"), 1},
		{"longhorn_volume_state", with("state", "detached"), 0},
		{"longhorn_volume_robustness", with("state", "degraded"), 1},
		{"longhorn_volume_robustness", with("state", "healthy"), 0},
		{"longhorn_volume_read_throughput", vl, 1},
		{"longhorn_volume_write_throughput", vl, 2},
		{"longhorn_volume_read_iops", vl, 3},
		{"longhorn_volume_write_iops", vl, 4},
		{"longhorn_volume_read_latency", vl, 5},
		{"longhorn_volume_write_latency", vl, 6},
		{"longhorn_node_count_total", nil, 2},
		{"longhorn_node_status", map[string]string{"node": "n1", "condition": "ready", "condition_reason": ""}, 1},
		{"longhorn_node_status", map[string]string{"node": "n1", "condition": "schedulable", "condition_reason": "KubernetesNodeCordoned"}, 0},
		{"longhorn_node_status", map[string]string{"node": "n1", "condition": "allowScheduling"}, 1},
		{"longhorn_node_storage_capacity_bytes", map[string]string{"node": "n1"}, 150},
		{"longhorn_node_storage_usage_bytes", map[string]string{"node": "n1"}, 40},
		{"longhorn_node_storage_reservation_bytes", map[string]string{"node": "n1"}, 15},
		{"longhorn_disk_capacity_bytes", map[string]string{"node": "n1", "disk": "d1"}, 100},
		{"longhorn_disk_usage_bytes", map[string]string{"node": "n1", "disk": "d1"}, 40},
		{"longhorn_disk_reservation_bytes", map[string]string{"node": "n1", "disk": "d2"}, 5},
	}
	for _, w := range want {
		got, ok := value(fams, w.name, w.labels)
		if !ok || got != w.v {
			t.Errorf("%s%v = %v (found %v), want %v", w.name, w.labels, got, ok, w.v)
		}
	}
	if _, ok := value(fams, "longhorn_volume_capacity_bytes", map[string]string{"volume": "v2"}); ok {
		t.Error("a volume another node owns is reported")
	}
	if _, ok := value(fams, "longhorn_node_storage_capacity_bytes", map[string]string{"node": "n2"}); ok {
		t.Error("another node's storage is reported")
	}
	if len(asked) != 1 || asked[0] != "10.0.0.1:10000" {
		t.Errorf("engine metrics asked of %v", asked)
	}
	// An engine that does not answer leaves the I/O metrics out, the rest stays.
	fams = scrape(t, Handler(Options{Source: src, NodeName: "n1", Log: logrus.New(),
		Engine: func(context.Context, string) (engineapi.Metrics, error) {
			return engineapi.Metrics{}, fmt.Errorf("down")
		}}))
	if _, ok := value(fams, "longhorn_volume_write_iops", vl); ok {
		t.Error("I/O metrics of an engine that failed")
	}
	if _, ok := value(fams, "longhorn_volume_capacity_bytes", vl); !ok {
		t.Error("capacity missing when the engine failed")
	}
}

// startProc starts the longhorn binary with args; the test kills it.
func startProc(t *testing.T, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "proc.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.LonghornBinary(t), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%v:\n%s", args[:2], b)
		}
		log.Close()
	})
}

// During real I/O through an engine (a replica and an engine process, NBD on
// a unix socket, qemu-io writing then reading), a scrape parsed with
// Prometheus' text parser shows non-zero throughput and IOPS of the volume.
func TestMetricsDuringIO(t *testing.T) {
	qemuIO := testutil.RequireTool(t, "qemu-io")
	const size = 64 << 20
	rport := testutil.FreePortRange(t, 10)
	startProc(t, "engine", "replica", filepath.Join(t.TempDir(), "r1"), "--size", strconv.Itoa(size),
		"--listen", "127.0.0.1:"+strconv.Itoa(rport))
	eaddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	sock := filepath.Join(t.TempDir(), "nbd.sock")
	time.Sleep(500 * time.Millisecond) // the replica's listeners
	startProc(t, "engine", "controller", "vol", "--size", strconv.Itoa(size), "--listen", eaddr,
		"--frontend", "nbd", "--nbd-listen", "unix:"+sock, "--replica", "tcp://127.0.0.1:"+strconv.Itoa(rport))
	mc := &engineapi.MetricsClient{}
	defer mc.Close()
	// The engine serves gRPC before its frontend is up: wait for both.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := mc.EngineMetrics(ctx, eaddr)
		cancel()
		if err == nil {
			_, err = os.Stat(sock)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine not serving: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	src := fakeSource{vols: []*longhorn.Volume{testVolume("vol", "n1")},
		engines: map[string][]*longhorn.Engine{"vol": {runningEngine("vol", eaddr)}}}
	h := Handler(Options{Source: src, NodeName: "n1", Engine: mc.EngineMetrics})
	uri := "nbd+unix:///vol?socket=" + sock
	vl := map[string]string{"volume": "vol", "node": "n1"}
	for _, phase := range []struct{ op, tput, iops string }{
		{"write -P 0x5a", "longhorn_volume_write_throughput", "longhorn_volume_write_iops"},
		{"read -P 0x5a", "longhorn_volume_read_throughput", "longhorn_volume_read_iops"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		io := exec.CommandContext(ctx, qemuIO, "-f", "raw", "-c", phase.op+" 0 32M", "-c", phase.op+" 32M 32M",
			"-c", phase.op+" 0 32M", "-c", phase.op+" 32M 32M", uri)
		var out strings.Builder
		io.Stdout, io.Stderr = &out, &out
		if err := io.Start(); err != nil {
			t.Fatal(err)
		}
		var tput, iops float64
		for i := 0; i < 100 && (tput == 0 || iops == 0); i++ {
			time.Sleep(100 * time.Millisecond)
			fams := scrape(t, h)
			tput, _ = value(fams, phase.tput, vl)
			iops, _ = value(fams, phase.iops, vl)
		}
		err := io.Wait()
		cancel()
		if err != nil || strings.Contains(out.String(), "Pattern verification failed") {
			t.Fatalf("qemu-io %s: %v\n%s", phase.op, err, out.String())
		}
		if tput == 0 || iops == 0 {
			t.Fatalf("during %s: %s %v, %s %v; want both non-zero", phase.op, phase.tput, tput, phase.iops, iops)
		}
		t.Logf("during %s: %s=%.0f B/s %s=%.0f", phase.op, phase.tput, tput, phase.iops, iops)
	}
}
