package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// scrape GETs a manager's /metrics (port 9500) and parses it with
// Prometheus' text parser.
func scrape(t *testing.T, ip string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + ip + ":9500/metrics")
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", ip, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s /metrics: %v", ip, err)
	}
	return fams
}

// sample returns the gauge value of the first series of name whose labels
// include every one of labels.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		ok := true
		for _, l := range m.GetLabel() {
			if want, set := labels[l.GetName()]; set && want != l.GetValue() {
				ok = false
			}
		}
		if ok {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// checkMetrics scrapes every manager's /metrics: each counts the 3 nodes
// and reports its own node's storage; exactly one, the volume's owner,
// reports the attached volume with its size and state.
func checkMetrics(t *testing.T, c *cluster, vol string, size float64) {
	t.Helper()
	owners := 0
	for _, n := range c.nodes {
		fams := scrape(t, n.ip)
		if v, _ := sample(fams, "longhorn_node_count_total", nil); v != 3 {
			t.Errorf("%s: longhorn_node_count_total %v, want 3", n.name, v)
		}
		if v, ok := sample(fams, "longhorn_node_storage_capacity_bytes", map[string]string{"node": n.name}); !ok || v <= 0 {
			t.Errorf("%s: node storage capacity %v %v", n.name, v, ok)
		}
		if _, ok := sample(fams, "longhorn_volume_capacity_bytes", map[string]string{"volume": vol}); !ok {
			continue
		}
		owners++
		vl := map[string]string{"volume": vol, "node": n.name}
		if v, _ := sample(fams, "longhorn_volume_capacity_bytes", vl); v != size {
			t.Errorf("%s: capacity %v, want %v", n.name, v, size)
		}
		if v, _ := sample(fams, "longhorn_volume_state", map[string]string{"volume": vol, "state": "attached"}); v != 1 {
			t.Errorf("%s: volume_state attached %v", n.name, v)
		}
	}
	if owners != 1 {
		t.Errorf("%d managers report volume %s, want its owner only", owners, vol)
	}
}

// checkBackupMetrics: the manager owning backup b reports it as Completed
// (3) with its size, and the volume owner reports snapshot snap as user
// created; no other manager reports either.
func checkBackupMetrics(t *testing.T, c *cluster, b *longhorn.Backup, vol, snap string) {
	t.Helper()
	size, err := strconv.ParseFloat(b.Status.Size, 64)
	if err != nil || size <= 0 {
		t.Fatalf("backup %s size %q", b.Name, b.Status.Size)
	}
	bl := map[string]string{"backup": b.Name, "volume": vol}
	sl := map[string]string{"snapshot": snap, "volume": vol, "user_created": "true"}
	var backups, snaps int
	c.eventually("backup and snapshot metrics", 30*time.Second, func() (bool, string) {
		backups, snaps = 0, 0
		var why []string
		for _, n := range c.nodes {
			fams := scrape(t, n.ip)
			if v, ok := sample(fams, "longhorn_backup_state", bl); ok {
				backups++
				if sz, _ := sample(fams, "longhorn_backup_actual_size_bytes", bl); v != 3 || sz != size {
					why = append(why, fmt.Sprintf("%s: state %v size %v, want 3 and %v", n.name, v, sz, size))
				}
			}
			if _, ok := sample(fams, "longhorn_snapshot_actual_size_bytes", sl); ok {
				snaps++
			}
		}
		return backups == 1 && snaps == 1 && len(why) == 0, fmt.Sprintf("%d managers report the backup, %d the snapshot; %v", backups, snaps, why)
	})
}

// ioSeries are the volume I/O metrics, in the order of ioSample.
var ioSeries = [6]string{"longhorn_volume_write_throughput", "longhorn_volume_write_iops", "longhorn_volume_write_latency",
	"longhorn_volume_read_throughput", "longhorn_volume_read_iops", "longhorn_volume_read_latency"}

// ioSample is one scrape of the I/O series of a volume.
type ioSample [6]float64

func scrapeIO(t *testing.T, ip, node, vol string) ioSample {
	t.Helper()
	fams := scrape(t, ip)
	var s ioSample
	for i, name := range ioSeries {
		v, ok := sample(fams, name, map[string]string{"volume": vol, "node": node})
		if !ok {
			t.Fatalf("%s: no %s for the attached volume", node, name)
		}
		s[i] = v
	}
	return s
}

// ioLoad runs qemu-io on endpoint until stopped: each round writes a
// pattern over 16 MiB in 64 KiB requests, then reads and verifies it.
type ioLoad struct {
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	ops      int
	err      error
	start    time.Time
	duration time.Duration
}

const ioLoadBlock = 64 << 10

func startIOLoad(endpoint string) *ioLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &ioLoad{cancel: cancel, done: make(chan struct{}), start: time.Now()}
	var args []string
	for _, op := range []string{"write", "read"} {
		for i := 0; i < 256; i++ {
			args = append(args, "-c", fmt.Sprintf("%s -P 0x3c %d 64k", op, i*ioLoadBlock))
		}
	}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			out, err := exec.CommandContext(ctx, "qemu-io", append([]string{"-f", "raw"}, append(args, endpoint)...)...).CombinedOutput()
			if ctx.Err() != nil {
				break
			}
			l.mu.Lock()
			if err != nil || strings.Contains(string(out), "fail") || strings.Contains(string(out), "error") {
				l.err = fmt.Errorf("qemu-io: %v: %.2000s", err, out)
			} else {
				l.ops += 512
			}
			l.mu.Unlock()
			if l.err != nil {
				break
			}
		}
		l.duration = time.Since(l.start)
	}()
	return l
}

func (l *ioLoad) stop() (ops int, d time.Duration, err error) {
	l.cancel()
	<-l.done
	return l.ops, l.duration, l.err
}

// checkIOMetrics scrapes the volume owner's /metrics once a second while
// qemu-io writes and reads 64 KiB requests through the volume's endpoint:
// the write and read throughput, IOPS and latency of the volume become
// non-zero; in every scrape throughput is IOPS x 64 KiB (Longhorn's 1-second
// window: bytes and operations of the same requests), IOPS is no more than
// the requests the client made, latency is under a second; once the load
// stops the series fall back to 0 (the last window is idle, not stale).
func checkIOMetrics(t *testing.T, c *cluster, vol, node, ip, endpoint string) {
	t.Helper()
	load := startIOLoad(endpoint)
	defer load.stop()
	var seenW, seenR bool
	var samples []ioSample
	deadline := time.Now().Add(30 * time.Second)
	for (!seenW || !seenR || len(samples) < 5) && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		s := scrapeIO(t, ip, node, vol)
		samples = append(samples, s)
		seenW = seenW || (s[0] > 0 && s[1] > 0 && s[2] > 0)
		seenR = seenR || (s[3] > 0 && s[4] > 0 && s[5] > 0)
	}
	ops, d, err := load.stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASURE qemu-io load: %d requests of 64 KiB in %v (%.0f/s); scrapes (write B/s, IOPS, ns, read B/s, IOPS, ns): %v",
		ops, d.Round(time.Millisecond), float64(ops)/d.Seconds(), samples)
	if !seenW || !seenR {
		t.Fatalf("in %d scrapes during I/O the write (%v) or read (%v) throughput/IOPS/latency never all non-zero: %v",
			len(samples), seenW, seenR, samples)
	}
	for _, s := range samples {
		for _, dir := range []int{0, 3} {
			tput, iops, lat := s[dir], s[dir+1], s[dir+2]
			if tput != iops*ioLoadBlock {
				t.Errorf("scrape %v: %s %v is not %s %v x 64 KiB", s, ioSeries[dir], tput, ioSeries[dir+1], iops)
			}
			if iops > float64(ops+512) {
				t.Errorf("scrape %v: %s %v above the %d requests made", s, ioSeries[dir+1], iops, ops)
			}
			if (iops == 0) != (lat == 0) || lat >= float64(time.Second) {
				t.Errorf("scrape %v: %s %v with %s %v", s, ioSeries[dir+2], lat, ioSeries[dir+1], iops)
			}
		}
	}
	var last ioSample
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if last = scrapeIO(t, ip, node, vol); last == (ioSample{}) {
			return
		}
	}
	t.Errorf("5 s after the load stopped the I/O series are still %v, want 0", last)
}
