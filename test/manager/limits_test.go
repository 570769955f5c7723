package manager_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// limitedReadBPS is the read bandwidth limit of the limited volume's replica.
const limitedReadBPS = 8 << 20

// TestVolumeResourceLimits is the per-volume resource limits story on three
// managers with their instance managers (cgroup v1 on this VM):
//
//  1. the webhook refuses a malformed limit, an unknown *-limit annotation
//     and (on cgroup v1) a write limit, naming the annotation;
//  2. two 1-replica volumes, one with longhorn.io/instance-cpu-limit 500m,
//     instance-memory-limit 256Mi and replica-read-bandwidth-limit 8Mi, one
//     without, attached on n1: every engine and replica process runs in its
//     own cgroup below its instance manager's, and the limited volume's
//     cgroups hold the limits (the bandwidth on the disk of the replica's
//     data directory);
//  3. fio reads 48 MiB from each volume (replica data evicted from the page
//     cache first): the limited one is capped near 8 MiB/s, a small fraction
//     of the unlimited one in the same run;
//  4. the limits cannot change while attached; after detach the process
//     cgroups are gone.
func TestVolumeResourceLimits(t *testing.T) {
	testutil.RequireTool(t, "fio")
	layout, err := cgroup.DetectHostLayout()
	if err != nil || layout.Version != 1 {
		t.Skipf("written for this VM's cgroup v1 (layout %+v, %v)", layout, err)
	}
	c := newCluster(t)
	c.waitInstanceManagersRunning()
	for ann, want := range map[string]string{
		"longhorn.io/instance-cpu-limit: half":           `"half" is not a quantity of CPU`,
		"longhorn.io/replica-read-bandwith-limit: 8Mi":   "unknown resource limit",
		"longhorn.io/replica-write-bandwidth-limit: 8Mi": "this node runs cgroup v1",
		"longhorn.io/replica-read-iops-limit: \"5\"":     "below the smallest limit 10",
		"longhorn.io/instance-memory-limit: \"1048576\"": "below the smallest limit",
	} {
		out, err := c.kubectl(limitedManifest("refused-vol", ann), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, want) || !strings.Contains(out, "metadata.annotations") {
			t.Fatalf("apply with %s: %v\n%s\nwant refused with %q", ann, err, out, want)
		}
	}
	const limited, plain = "limited-vol", "plain-vol"
	applyManifest(t, c, limitedManifest(limited, "longhorn.io/instance-cpu-limit: 500m",
		"longhorn.io/instance-memory-limit: 256Mi", fmt.Sprintf("longhorn.io/replica-read-bandwidth-limit: %q", strconv.Itoa(limitedReadBPS))))
	applyManifest(t, c, limitedManifest(plain))
	for _, v := range []string{limited, plain} {
		c.waitState(v, longhorn.VolumeStateDetached, "", 60*time.Second)
		c.attach(v, "n1")
	}
	for _, v := range []string{limited, plain} {
		c.waitState(v, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	}
	groups := c.checkProcessCgroups(t, layout, limited, true)
	groups = append(groups, c.checkProcessCgroups(t, layout, plain, false)...)

	bw := map[string]float64{}
	for _, v := range []string{limited, plain} {
		ep := c.hostEndpoint("n1", c.engineOf(v).Status.Endpoint)
		qemuIO(t, ep, "write -P 0x5a 0 48M")
		evictReplicaData(t, c.replicasOf(v)[0])
		bw[v] = fioReadBW(t, ep)
	}
	ratio := bw[limited] / bw[plain]
	t.Logf("fio sequential read, 48 MiB, 1 replica: limited (read-bandwidth 8 MiB/s) %.1f MiB/s, unlimited %.1f MiB/s, ratio %.3f",
		bw[limited]/(1<<20), bw[plain]/(1<<20), ratio)
	if bw[limited] > 1.3*limitedReadBPS || ratio > 0.5 {
		t.Fatalf("read bandwidth limit not effective: limited %.0f B/s (limit %d), unlimited %.0f B/s", bw[limited], limitedReadBPS, bw[plain])
	}

	out, err := c.kubectl("", "-n", ns, "annotate", "--overwrite", "volumes.longhorn.io", limited, "longhorn.io/instance-cpu-limit=1")
	if err == nil || !strings.Contains(out, "cannot change while the volume is attached") {
		t.Fatalf("limit change while attached: %v\n%s", err, out)
	}
	for _, v := range []string{limited, plain} {
		c.attach(v, "")
	}
	for _, v := range []string{limited, plain} {
		c.waitState(v, longhorn.VolumeStateDetached, "", 60*time.Second)
	}
	c.eventually("process cgroups removed", 20*time.Second, func() (bool, string) {
		for _, d := range groups {
			if _, err := os.Stat(d); err == nil {
				return false, d + " still exists"
			}
		}
		return true, ""
	})
}

func limitedManifest(vol string, annotations ...string) string {
	ann := ""
	if len(annotations) > 0 {
		ann = "\n  annotations:\n    " + strings.Join(annotations, "\n    ")
	}
	return fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: Volume
metadata:
  name: %s
  namespace: %s%s
spec: {size: 64Mi, numberOfReplicas: 1, frontend: nbd}
`, vol, ns, ann)
}

func applyManifest(t *testing.T, c *cluster, manifest string) {
	t.Helper()
	if out, err := c.kubectl(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s\n%s", err, out, manifest)
	}
}

// groupDir matches the cgroup of one process run: <name>-<uuid prefix>
// below the instance manager's longhorn-instances-<pid>-<random>.
var groupDir = regexp.MustCompile(`/` + cgroup.StalePrefix + `\d+-[0-9a-f]{8}/([a-z0-9.-]+)-[0-9a-f]{8}$`)

// checkProcessCgroups checks that the engine and the replica process of vol
// run in cgroups of their own and, when limited, hold the limits; it
// returns the cgroup directories.
func (c *cluster) checkProcessCgroups(t *testing.T, layout cgroup.Layout, vol string, limited bool) []string {
	t.Helper()
	e, r := c.engineOf(vol), c.replicasOf(vol)[0]
	procs := map[string][]int{
		e.Name: c.pids("engine", "controller", "--engine-instance-name", e.Name),
		r.Name: c.pids("engine", "replica", "--replica-instance-name", r.Name),
	}
	dataDir := filepath.Join(r.Spec.DiskPath, "replicas", r.Spec.DataDirectoryName)
	var st unix.Stat_t
	if err := unix.Stat(dataDir, &st); err != nil {
		t.Fatal(err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	var dirs []string
	for name, pids := range procs {
		if len(pids) != 1 {
			t.Fatalf("%s: processes %v, want one", name, pids)
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
		if err != nil {
			t.Fatal(err)
		}
		paths := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if p := strings.SplitN(line, ":", 3); len(p) == 3 {
				for _, ctl := range strings.Split(p[1], ",") {
					paths[ctl] = p[2]
				}
			}
		}
		want := map[string]string{"cpu/cpu.cfs_quota_us": "-1"}
		if limited {
			want = map[string]string{"cpu/cpu.cfs_quota_us": "50000", "memory/memory.limit_in_bytes": strconv.Itoa(256 << 20)}
			if name == r.Name {
				want["blkio/blkio.throttle.read_bps_device"] = dev + " " + strconv.Itoa(limitedReadBPS)
			}
		}
		for _, ctl := range []string{"cpu", "memory", "blkio"} {
			m := groupDir.FindStringSubmatch(paths[ctl])
			if m == nil || m[1] != name {
				t.Fatalf("%s (pid %d) %s cgroup %q: want its own group .../%sNNN/%s-<uuid>", name, pids[0], ctl, paths[ctl], cgroup.StalePrefix, name)
			}
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", ctl, paths[ctl]))
		}
		for file, v := range want {
			ctl, f, _ := strings.Cut(file, "/")
			b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctl, paths[ctl], f))
			if err != nil || strings.TrimSpace(string(b)) != v {
				t.Fatalf("%s %s = %q (%v), want %q", name, file, strings.TrimSpace(string(b)), err, v)
			}
		}
		t.Logf("%s pid %d: cgroup %s, limits %v", name, pids[0], paths["cpu"], want)
	}
	return dirs
}

// evictReplicaData writes the replica's files back and drops them from the
// page cache, so that reads reach the disk (where the limit applies).
func evictReplicaData(t *testing.T, r longhorn.Replica) {
	t.Helper()
	dir := filepath.Join(r.Spec.DiskPath, "replicas", r.Spec.DataDirectoryName)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".img") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
}

// fioReadBW reads the first 48 MiB of the NBD endpoint with fio and returns
// bytes per second.
func fioReadBW(t *testing.T, endpoint string) float64 {
	t.Helper()
	// fio prints "connected to NBD server" on stdout: the report goes to a file.
	report := filepath.Join(t.TempDir(), "fio.json")
	if out, err := exec.Command("fio", "--name=read", "--ioengine=nbd", "--uri="+endpoint, "--rw=read", "--bs=1M",
		"--size=48M", "--iodepth=4", "--runtime=60", "--output-format=json", "--output="+report).CombinedOutput(); err != nil {
		t.Fatalf("fio on %s: %v\n%s", endpoint, err, out)
	}
	out, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Jobs []struct {
			Read struct {
				BWBytes float64 `json:"bw_bytes"`
				IOBytes int64   `json:"io_bytes"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) != 1 || res.Jobs[0].Read.IOBytes != 48<<20 {
		t.Fatalf("fio output (%v): %s", err, out)
	}
	return res.Jobs[0].Read.BWBytes
}
