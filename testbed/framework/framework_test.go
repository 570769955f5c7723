package framework

import (
	"errors"
	"slices"
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestParseEndpoint(t *testing.T) {
	cases := []struct {
		in   string
		want Target
	}{
		{"nbd+unix:///vol?socket=/var/run/longhorn/nbd/vol.sock", Target{Frontend: "nbd", Socket: "/var/run/longhorn/nbd/vol.sock", Export: "vol"}},
		{"nbd://10.99.0.1/vol", Target{Frontend: "nbd", Host: "10.99.0.1", Port: 10809, Export: "vol"}},
		{"nbd://10.99.0.1:10000/", Target{Frontend: "nbd", Host: "10.99.0.1", Port: 10000}},
		{"iscsi://10.99.0.1:3260/iqn.2019-10.io.longhorn:vol/1", Target{Frontend: "iscsi", Host: "10.99.0.1", Port: 3260, IQN: "iqn.2019-10.io.longhorn:vol", LUN: 1}},
		{"iscsi://10.99.0.1/iqn.2019-10.io.longhorn:vol/0", Target{Frontend: "iscsi", Host: "10.99.0.1", Port: 3260, IQN: "iqn.2019-10.io.longhorn:vol", LUN: 0}},
	}
	for _, tc := range cases {
		got, err := ParseEndpoint(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	bad := map[string]string{
		"":                                   "scheme",
		"tcp://10.99.0.1:10000":              "scheme",
		"nbd+unix:///vol":                    "socket",
		"nbd+unix:///vol?socket=rel.sock":    "socket",
		"nbd:///vol":                         "no host",
		"nbd://h:0/vol":                      "port",
		"nbd://h:70000/vol":                  "port",
		"iscsi://h/iqn.x:vol":                "IQN/LUN",
		"iscsi://h/notiqn/1":                 "IQN/LUN",
		"iscsi://h/iqn.x:vol/x":              "LUN",
		"iscsi://h/iqn.x:vol/99999":          "LUN",
		"iscsi://h:3260/iqn.x:vol/1/extra":   "IQN/LUN",
		"nbd+unix:///v?socket=/a%2Cb/c.sock": "", // parses; QemuImageOpts rejects the comma
	}
	for in, part := range bad {
		_, err := ParseEndpoint(in)
		if part == "" {
			continue
		}
		if !errors.Is(err, ErrEndpoint) || !strings.Contains(err.Error(), part) {
			t.Errorf("ParseEndpoint(%q) = %v; want ErrEndpoint naming %q", in, err, part)
		}
	}
}

func TestQemuImageOpts(t *testing.T) {
	got, err := QemuImageOpts("nbd+unix:///vol?socket=/run/v.sock", 4096, 8192)
	want := "driver=raw,offset=4096,size=8192,file.driver=nbd,file.server.type=unix,file.server.path=/run/v.sock,file.export=vol"
	if err != nil || got != want {
		t.Errorf("nbd+unix: %q, %v; want %q", got, err, want)
	}
	got, err = QemuImageOpts("iscsi://10.99.0.1:3260/iqn.2019-10.io.longhorn:vol/1", 0, 512)
	want = "driver=raw,offset=0,size=512,file.driver=iscsi,file.transport=tcp,file.portal=10.99.0.1:3260," +
		"file.target=iqn.2019-10.io.longhorn:vol,file.lun=1,file.initiator-name=" + InitiatorIQN
	if err != nil || got != want {
		t.Errorf("iscsi: %q, %v; want %q", got, err, want)
	}
	got, err = QemuImageOpts("nbd://10.99.0.1:10809/vol", 0, 512)
	want = "driver=raw,offset=0,size=512,file.driver=nbd,file.server.type=inet,file.server.host=10.99.0.1,file.server.port=10809,file.export=vol"
	if err != nil || got != want {
		t.Errorf("nbd tcp: %q, %v; want %q", got, err, want)
	}
	for _, in := range []struct {
		uri       string
		off, size int64
	}{{"nbd+unix:///v?socket=/a%2Cb", 0, 512}, {"nbd://h/v", -1, 512}, {"nbd://h/v", 0, 0}, {"http://h/", 0, 512}} {
		if _, err := QemuImageOpts(in.uri, in.off, in.size); err == nil {
			t.Errorf("QemuImageOpts(%q, %d, %d): want an error", in.uri, in.off, in.size)
		}
	}
}

// FuzzParseEndpoint: endpoints come from the API server (engine status);
// no input may panic, and accepted ones render qemu options or a clear error.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{
		"nbd+unix:///vol?socket=/var/run/longhorn/nbd/vol.sock", "nbd://10.99.0.1:10809/vol",
		"iscsi://10.99.0.1:3260/iqn.2019-10.io.longhorn:vol/1", "iscsi://[::1]/iqn.a:b/0", "%zz", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseEndpoint(s)
		if err != nil {
			if !errors.Is(err, ErrEndpoint) {
				t.Fatalf("error %v does not wrap ErrEndpoint", err)
			}
			return
		}
		if tg.Frontend != longhorn.VolumeFrontendNBD && tg.Frontend != longhorn.VolumeFrontendISCSI {
			t.Fatalf("frontend %q", tg.Frontend)
		}
		if tg.Socket == "" && (tg.Port < 1 || tg.Port > 65535 || tg.Host == "") {
			t.Fatalf("accepted %q with host %q port %d", s, tg.Host, tg.Port)
		}
		_, _ = QemuImageOpts(s, 0, 512)
	})
}

func TestFindInstanceManagerAndInstances(t *testing.T) {
	procs := []proc{
		{PID: 10, PPID: 1, Argv: []string{"/x/bin/longhorn", "manager", "--listen", "10.99.0.1:9500"}},
		{PID: 11, PPID: 1, Argv: []string{"/x/bin/longhorn", "instance-manager", "--listen", "10.99.0.1:8500"}},
		{PID: 12, PPID: 1, Argv: []string{"/x/bin/longhorn", "instance-manager", "--listen", "10.99.0.2:8500"}},
		{PID: 20, PPID: 11, Argv: []string{"/x/bin/longhorn", "engine", "replica", "/d", "--replica-instance-name", "v-r-1"}},
		{PID: 21, PPID: 12, Argv: []string{"/x/bin/longhorn", "engine", "replica", "/d", "--replica-instance-name", "v-r-2"}},
		{PID: 22, PPID: 11, Argv: []string{"/x/bin/longhorn", "engine", "controller", "v", "--engine-instance-name=v-e-0"}},
		{PID: 23, PPID: 99, Argv: []string{"/x/bin/longhorn", "engine", "replica", "/d", "--replica-instance-name", "v-r-1"}},
	}
	forked := append(slices.Clone(procs), proc{PID: 30, PPID: 11, Argv: procs[1].Argv})
	if pid, err := findInstanceManager(forked, map[int]bool{11: true, 30: true}, ""); err != nil || pid != 11 {
		t.Errorf("with a forked, not yet exec'd child: %d, %v; want 11", pid, err)
	}
	if pid, err := findInstanceManager(procs, nil, "10.99.0.2"); err != nil || pid != 12 {
		t.Errorf("by pod IP: %d, %v; want 12", pid, err)
	}
	if pid, err := findInstanceManager(procs, map[int]bool{11: true, 20: true}, "ignored"); err != nil || pid != 11 {
		t.Errorf("by cgroup: %d, %v; want 11", pid, err)
	}
	if _, err := findInstanceManager(procs, nil, "10.99.0.3"); !errors.Is(err, ErrNoProcess) {
		t.Errorf("no match: %v; want ErrNoProcess", err)
	}
	if _, err := findInstanceManager(procs, map[int]bool{11: true, 12: true}, ""); !errors.Is(err, ErrNoProcess) {
		t.Errorf("two matches: %v; want ErrNoProcess", err)
	}
	if pid, err := findInstance(procs, 11, "replica", "replica-instance-name", "v-r-1"); err != nil || pid != 20 {
		t.Errorf("replica: %d, %v; want 20 (not 23, another parent)", pid, err)
	}
	if pid, err := findInstance(procs, 11, "controller", "engine-instance-name", "v-e-0"); err != nil || pid != 22 {
		t.Errorf("engine: %d, %v; want 22", pid, err)
	}
	if _, err := findInstance(procs, 11, "replica", "replica-instance-name", "v-r-2"); !errors.Is(err, ErrNoProcess) {
		t.Errorf("replica under another IM: %v; want ErrNoProcess", err)
	}
}

func TestInPodCgroup(t *testing.T) {
	const cg = "9:name=systemd:/lhcluster-lh/node-1/kubepods/burstable/pod8a3f-1b67/b307\n8:pids:/lhcluster-lh/node-1/kubepods/burstable/pod8a3f-1b67/b307\n"
	if !inPodCgroup(cg, "8a3f-1b67") {
		t.Error("pod cgroup not found")
	}
	if inPodCgroup(cg, "8a3f") || inPodCgroup(cg, "1b67") || inPodCgroup("0::/\n", "8a3f-1b67") {
		t.Error("a prefix, a suffix or the root matched")
	}
}

func TestDataSet(t *testing.T) {
	d := DataSet{Seed: 7, Offset: 4096, Size: 1 << 20}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	a, b := d.Bytes(), d.Bytes()
	if string(a) != string(b) || d.SHA256() != (DataSet{Seed: 7, Size: 1 << 20}).SHA256() {
		t.Fatal("data set is not reproducible from its seed")
	}
	if d.SHA256() == (DataSet{Seed: 8, Size: 1 << 20}).SHA256() {
		t.Fatal("different seeds gave the same data")
	}
	for _, bad := range []DataSet{{Size: 0}, {Size: 100}, {Offset: -512, Size: 512}, {Offset: 1, Size: 512}, {Size: MaxDataSetSize + 512}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: want a validation error", bad)
		}
	}
	h := strings.Repeat("ab", 32)
	if got, err := parseSHA256Sum([]byte(h + "  /tmp/f\n")); err != nil || got != h {
		t.Errorf("parseSHA256Sum: %q, %v", got, err)
	}
	if _, err := parseSHA256Sum([]byte("nope")); err == nil {
		t.Error("parseSHA256Sum(nope): want an error")
	}
}

func TestVolumeConditions(t *testing.T) {
	v := &longhorn.Volume{Status: longhorn.VolumeStatus{
		State: longhorn.VolumeStateAttached, Robustness: longhorn.VolumeRobustnessDegraded, CurrentNodeID: "node-1",
		Conditions: []longhorn.Condition{{Type: longhorn.VolumeConditionTypeScheduled, Status: longhorn.ConditionStatusTrue}},
	}}
	if ok, _ := All(AttachedTo("node-1"), Scheduled(), StateIs(longhorn.VolumeStateAttached))(v); !ok {
		t.Error("attached+scheduled: want true")
	}
	ok, saw := All(Scheduled(), RobustnessIs(longhorn.VolumeRobustnessHealthy))(v)
	if ok || !strings.Contains(saw, `robustness "degraded", want "healthy"`) {
		t.Errorf("robustness: %v %q", ok, saw)
	}
	if ok, saw := ConditionIs("Restore", longhorn.ConditionStatusTrue)(v); ok || !strings.Contains(saw, "no condition Restore") {
		t.Errorf("missing condition: %v %q", ok, saw)
	}
	if ok, _ := AttachedTo("node-2")(v); ok {
		t.Error("AttachedTo(node-2): want false")
	}
}

func TestHealthyReplicasAndModes(t *testing.T) {
	rs := []Replica{
		{Name: "a", State: longhorn.InstanceStateRunning, Mode: longhorn.ReplicaModeRW},
		{Name: "b", State: longhorn.InstanceStateRunning, Mode: longhorn.ReplicaModeWO},
		{Name: "c", State: longhorn.InstanceStateStopped, Mode: longhorn.ReplicaModeRW},
	}
	if n := HealthyReplicas(rs); n != 1 {
		t.Errorf("HealthyReplicas = %d, want 1", n)
	}
	if s := modeString(map[string]longhorn.ReplicaMode{"b": "WO", "a": "RW"}); s != "a:RW b:WO" {
		t.Errorf("modeString = %q", s)
	}
}
