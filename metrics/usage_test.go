package metrics

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// fakeProc writes a proc file system under root: uptime, and each process
// as pid -> {ppid, utime+stime ticks, start ticks, VmRSS kB, argv}.
type fakeProcess struct {
	ppid, ticks, start, rssKB int
	argv                      []string
}

func writeProc(t *testing.T, root string, uptime float64, procs map[int]fakeProcess) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "uptime"), fmt.Appendf(nil, "%.2f 0.00\n", uptime), 0o644); err != nil {
		t.Fatal(err)
	}
	for pid, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Fields 3.. after "(comm)": state ppid ... utime(14) stime(15) ... starttime(22).
		f := make([]string, 20)
		for i := range f {
			f[i] = "0"
		}
		f[0], f[1], f[11], f[12], f[19] = "S", fmt.Sprint(p.ppid), fmt.Sprint(p.ticks), "0", fmt.Sprint(p.start)
		files := map[string]string{
			"stat":    fmt.Sprintf("%d (long horn) %s\n", pid, strings.Join(f, " ")),
			"status":  fmt.Sprintf("Name:\tlonghorn\nVmRSS:\t%d kB\n", p.rssKB),
			"cmdline": strings.Join(p.argv, "\x00") + "\x00",
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The meter finds the instance manager by its --listen address, sums its
// tree (the instance manager and its replica process) and reports CPU as
// millicpu: since the start on the first measurement, over the interval
// afterwards.
func TestUsageMeterTree(t *testing.T) {
	root := t.TempDir()
	im := []string{"/usr/local/bin/longhorn", "instance-manager", "--listen", "10.0.0.7:8500"}
	writeProc(t, root, 100, map[int]fakeProcess{
		1:  {ppid: 0, ticks: 5, start: 0, rssKB: 1, argv: []string{"/sbin/init"}},
		40: {ppid: 1, ticks: 400, start: 9000, rssKB: 2048, argv: im},
		41: {ppid: 40, ticks: 100, start: 9100, rssKB: 1024, argv: []string{"longhorn", "engine", "replica"}},
		50: {ppid: 1, ticks: 999, start: 100, rssKB: 9999, argv: []string{"longhorn", "instance-manager", "--listen", "10.0.0.8:8500"}},
	})
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	m := &UsageMeter{Root: root, Now: func() time.Time { return now }}
	pid := m.FindInstanceManager("10.0.0.7")
	if pid != 40 {
		t.Fatalf("instance manager pid %d, want 40", pid)
	}
	u, ok := m.Measure("im", pid)
	// 500 ticks = 5 s of CPU over the 10 s since start (uptime 100 s, start 90 s).
	if !ok || u.MemoryBytes != 3072<<10 || u.MilliCPU < 499 || u.MilliCPU > 501 {
		t.Fatalf("first measurement %+v %v, want 500 millicpu and 3 MiB", u, ok)
	}
	writeProc(t, root, 102, map[int]fakeProcess{
		40: {ppid: 1, ticks: 450, start: 9000, rssKB: 2048, argv: im},
		41: {ppid: 40, ticks: 150, start: 9100, rssKB: 1024, argv: []string{"longhorn", "engine", "replica"}},
	})
	now = now.Add(2 * time.Second)
	if u, _ = m.Measure("im", pid); u.MilliCPU < 499 || u.MilliCPU > 501 {
		t.Fatalf("second measurement %+v: want 100 ticks over 2 s = 500 millicpu", u)
	}
	if _, ok := m.Measure("gone", 77); ok {
		t.Fatal("a missing process measured")
	}
}

// /metrics carries the instance manager and manager CPU and memory with
// Longhorn's names and labels, parsed by Prometheus' text parser: the
// instance manager's from a proc file system, its requests from its pod,
// the manager's from this very process (a real /proc, CPU burned first).
func TestResourceMetrics(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, 100, map[int]fakeProcess{
		40: {ppid: 1, ticks: 400, start: 9000, rssKB: 2048, argv: []string{"longhorn", "instance-manager", "--listen=10.0.0.7:8500"}},
	})
	im := &longhorn.InstanceManager{}
	im.Name, im.Spec.NodeID, im.Status.IP, im.Status.CurrentState = "instance-manager-abc", "n1", "10.0.0.7", longhorn.InstanceManagerStateRunning
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("120m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
	deadline := time.Now().Add(200 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	h := Handler(Options{Source: fakeSource{ims: []*longhorn.InstanceManager{im}}, NodeName: "n1",
		Procs: &UsageMeter{Root: root}, Self: &UsageMeter{}, SelfPID: os.Getpid(), ManagerName: "longhorn-manager-xyz",
		Pod: func(_ context.Context, name string) (*corev1.Pod, error) { return pod, nil }})
	fams := scrape(t, h)
	imL := map[string]string{"instance_manager": im.Name, "instance_manager_type": "aio", "node": "n1"}
	for name, want := range map[string]float64{
		"longhorn_instance_manager_cpu_requests_millicpu": 120,
		"longhorn_instance_manager_memory_requests_bytes": 64 << 20,
		"longhorn_instance_manager_memory_usage_bytes":    2048 << 10,
		"longhorn_instance_manager_cpu_usage_millicpu":    400,
	} {
		if got, ok := value(fams, name, imL); !ok || got != want {
			t.Errorf("%s%v = %v (%v), want %v", name, imL, got, ok, want)
		}
	}
	mL := map[string]string{"manager": "longhorn-manager-xyz", "node": "n1"}
	for _, name := range []string{"longhorn_manager_cpu_usage_millicpu", "longhorn_manager_memory_usage_bytes"} {
		if got, ok := value(fams, name, mL); !ok || got <= 0 {
			t.Errorf("%s%v = %v (%v), want > 0", name, mL, got, ok)
		}
	}
}
