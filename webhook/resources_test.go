package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func validNode() *longhorn.Node {
	return &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: longhorn.NodeSpec{
		AllowScheduling: true, Tags: []string{"fast"},
		Disks: map[string]longhorn.DiskSpec{
			"default-disk-1": {Type: longhorn.DiskTypeFilesystem, Path: "/var/lib/longhorn", AllowScheduling: true},
			"disk-2":         {Type: longhorn.DiskTypeFilesystem, Path: "/mnt/disk2", AllowScheduling: false, Tags: []string{"ssd"}},
		}}}
}

func TestValidateNode(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(n *longhorn.Node)
		field  string
	}{
		{"valid", func(*longhorn.Node) {}, ""},
		{"qualified-name tags", func(n *longhorn.Node) { n.Spec.Tags = []string{"example.com/fast", "zone_a.1"} }, ""},
		{"bad node tag", func(n *longhorn.Node) { n.Spec.Tags = []string{"a b"} }, "spec.tags[0]"},
		{"bad disk tag", func(n *longhorn.Node) {
			d := n.Spec.Disks["disk-2"]
			d.Tags = []string{"x/y/z"}
			n.Spec.Disks["disk-2"] = d
		}, "spec.disks[disk-2].tags[0]"},
		{"relative path", func(n *longhorn.Node) { d := n.Spec.Disks["disk-2"]; d.Path = "mnt/disk2"; n.Spec.Disks["disk-2"] = d }, "spec.disks[disk-2].path"},
		{"unclean path", func(n *longhorn.Node) {
			d := n.Spec.Disks["disk-2"]
			d.Path = "/mnt/../disk2"
			n.Spec.Disks["disk-2"] = d
		}, "spec.disks[disk-2].path"},
		{"duplicate path", func(n *longhorn.Node) {
			d := n.Spec.Disks["disk-2"]
			d.Path = "/var/lib/longhorn"
			n.Spec.Disks["disk-2"] = d
		}, "spec.disks[disk-2].path"},
		{"negative reserve", func(n *longhorn.Node) {
			d := n.Spec.Disks["disk-2"]
			d.StorageReserved = -1
			n.Spec.Disks["disk-2"] = d
		}, "spec.disks[disk-2].storageReserved"},
		{"bad type", func(n *longhorn.Node) { d := n.Spec.Disks["disk-2"]; d.Type = "tape"; n.Spec.Disks["disk-2"] = d }, "spec.disks[disk-2].diskType"},
		{"bad disk name", func(n *longhorn.Node) { n.Spec.Disks["bad/name"] = longhorn.DiskSpec{Type: "filesystem", Path: "/x"} }, "spec.disks[bad/name]"},
		{"negative cpu", func(n *longhorn.Node) { n.Spec.InstanceManagerCPURequest = -1 }, "spec.instanceManagerCPURequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := validNode()
			tc.mutate(n)
			checkField(t, validateNodeSpec(n), tc.field)
		})
	}
}

func TestValidateDiskRemoval(t *testing.T) {
	old := validNode()
	n := old.DeepCopy()
	delete(n.Spec.Disks, "default-disk-1")
	checkField(t, validateDiskRemoval(old, n), "spec.disks[default-disk-1]") // scheduling still allowed
	n = old.DeepCopy()
	delete(n.Spec.Disks, "disk-2")
	checkField(t, validateDiskRemoval(old, n), "") // disabled, no replicas
	old.Status.DiskStatus = map[string]*longhorn.DiskStatus{"disk-2": {ScheduledReplica: map[string]int64{"r1": 1}}}
	err := validateDiskRemoval(old, n)
	checkField(t, err, "spec.disks[disk-2]") // still holds a replica
	if err == nil || !strings.Contains(err.Error(), "Please disable the disk /mnt/disk2 and remove all replicas") {
		t.Errorf("disk removal error %v lacks Longhorn's text", err)
	}
}

func TestMutateNodeSortsTags(t *testing.T) {
	n := validNode()
	n.Spec.Tags = []string{"b", "a", "b"}
	d := n.Spec.Disks["disk-2"]
	d.Type = ""
	n.Spec.Disks["disk-2"] = d
	ops := mutateNode(n)
	if len(ops) != 2 || ops[0].Path != "/spec/tags" || ops[1].Path != "/spec/disks/disk-2/diskType" {
		t.Fatalf("ops %+v", ops)
	}
	if got := ops[0].Value.([]string); len(got) != 2 || got[0] != "a" {
		t.Fatalf("tags %v", got)
	}
	if jsonPointerEscape("a/b~c") != "a~1b~0c" {
		t.Fatal("pointer escape")
	}
}

func TestValidateInstances(t *testing.T) {
	eng := func() *longhorn.Engine {
		return &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "v-e-0"}, Spec: longhorn.EngineSpec{
			InstanceSpec: longhorn.InstanceSpec{VolumeName: "v", DataEngine: "v1", DesireState: "running", VolumeSize: 1 << 30},
			Frontend:     longhorn.VolumeFrontendNBD, ReplicaAddressMap: map[string]string{"v-r-1": "127.0.0.1:10000"}}}
	}
	k := EngineKind()
	ctx := context.Background()
	cases := []struct {
		name   string
		mutate func(e *longhorn.Engine)
		field  string
	}{
		{"valid", func(*longhorn.Engine) {}, ""},
		{"no volume", func(e *longhorn.Engine) { e.Spec.VolumeName = "" }, "spec.volumeName"},
		{"bad state", func(e *longhorn.Engine) { e.Spec.DesireState = "dancing" }, "spec.desireState"},
		{"bad frontend", func(e *longhorn.Engine) { e.Spec.Frontend = "scsi" }, "spec.frontend"},
		{"bad address", func(e *longhorn.Engine) { e.Spec.ReplicaAddressMap["v-r-1"] = "127.0.0.1" }, "spec.replicaAddressMap[v-r-1]"},
		{"port 0", func(e *longhorn.Engine) { e.Spec.ReplicaAddressMap["v-r-1"] = "127.0.0.1:0" }, "spec.replicaAddressMap[v-r-1]"},
		{"engine change", func(e *longhorn.Engine) { e.Spec.DataEngine = "v2" }, "spec.dataEngine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := eng()
			tc.mutate(e)
			checkField(t, k.Validate(ctx, Request[*longhorn.Engine]{Operation: admissionv1.Update, Object: e, Old: eng()}), tc.field)
		})
	}
	rk := ReplicaKind()
	rep := func() *longhorn.Replica {
		return &longhorn.Replica{Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v", DataEngine: "v1"},
			DiskPath: "/var/lib/longhorn", DataDirectoryName: "v-0123abcd"}}
	}
	checkField(t, rk.Validate(ctx, Request[*longhorn.Replica]{Operation: admissionv1.Create, Object: rep()}), "")
	bad := rep()
	bad.Spec.DataDirectoryName = "../etc"
	checkField(t, rk.Validate(ctx, Request[*longhorn.Replica]{Operation: admissionv1.Create, Object: bad}), "spec.dataDirectoryName")
	bad = rep()
	bad.Spec.DiskPath = "relative"
	checkField(t, rk.Validate(ctx, Request[*longhorn.Replica]{Operation: admissionv1.Create, Object: bad}), "spec.diskPath")
	moved := rep()
	moved.Spec.VolumeName = "other"
	checkField(t, rk.Validate(ctx, Request[*longhorn.Replica]{Operation: admissionv1.Update, Object: moved, Old: rep()}), "spec.volumeName")
}

func TestValidateVolumeAttachment(t *testing.T) {
	va := func() *longhorn.VolumeAttachment {
		return &longhorn.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Spec: longhorn.VolumeAttachmentSpec{Volume: "v",
			AttachmentTickets: map[string]*longhorn.AttachmentTicket{"longhorn-api-x": {ID: "longhorn-api-x", Type: longhorn.AttacherTypeLonghornAPI,
				NodeID: "n1", Parameters: map[string]string{"disableFrontend": "false"}}}}}
	}
	k := VolumeAttachmentKind()
	cases := []struct {
		name   string
		mutate func(*longhorn.VolumeAttachment)
		field  string
	}{
		{"valid", func(*longhorn.VolumeAttachment) {}, ""},
		{"wrong volume", func(a *longhorn.VolumeAttachment) { a.Spec.Volume = "w" }, "spec.volume"},
		{"id mismatch", func(a *longhorn.VolumeAttachment) { a.Spec.AttachmentTickets["longhorn-api-x"].ID = "y" }, "spec.attachmentTickets[longhorn-api-x].id"},
		{"bad type", func(a *longhorn.VolumeAttachment) { a.Spec.AttachmentTickets["longhorn-api-x"].Type = "me" }, "spec.attachmentTickets[longhorn-api-x].type"},
		{"no node", func(a *longhorn.VolumeAttachment) { a.Spec.AttachmentTickets["longhorn-api-x"].NodeID = "" }, "spec.attachmentTickets[longhorn-api-x].nodeID"},
		{"bad parameter", func(a *longhorn.VolumeAttachment) {
			a.Spec.AttachmentTickets["longhorn-api-x"].Parameters["disableFrontend"] = "maybe"
		}, "spec.attachmentTickets[longhorn-api-x].parameters.disableFrontend"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := va()
			tc.mutate(a)
			checkField(t, k.Validate(context.Background(), Request[*longhorn.VolumeAttachment]{Operation: admissionv1.Create, Object: a}), tc.field)
		})
	}
}

type fixedRetention int

func (f fixedRetention) MaxRecurringJobRetention() (int, error) { return int(f), nil }

func TestValidateRecurringJob(t *testing.T) {
	job := func() *longhorn.RecurringJob {
		j := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "snap"}, Spec: longhorn.RecurringJobSpec{
			Task: longhorn.RecurringJobTypeSnapshot, Cron: "*/5 * * * *", Retain: 3, Groups: []string{"default"}}}
		return applyJobOps(j, mutateRecurringJob(j))
	}
	cases := []struct {
		name   string
		mutate func(*longhorn.RecurringJob)
		field  string
	}{
		{"valid", func(*longhorn.RecurringJob) {}, ""},
		{"bad cron", func(j *longhorn.RecurringJob) { j.Spec.Cron = "61 * * * *" }, "spec.cron"},
		{"bad task", func(j *longhorn.RecurringJob) { j.Spec.Task = "defrag" }, "spec.task"},
		{"retain 0 for snapshot", func(j *longhorn.RecurringJob) { j.Spec.Retain = 0 }, "spec.retain"},
		{"retain over the limit", func(j *longhorn.RecurringJob) { j.Spec.Retain = 101 }, "spec.retain"},
		{"retain at the limit", func(j *longhorn.RecurringJob) { j.Spec.Retain = 100 }, ""},
		{"cleanup without retain", func(j *longhorn.RecurringJob) { j.Spec.Task, j.Spec.Retain = "snapshot-cleanup", 0 }, ""},
		{"age based without age", func(j *longhorn.RecurringJob) { j.Spec.RetentionPolicy = "age-based" }, "spec.retainAge"},
		{"age based", func(j *longhorn.RecurringJob) {
			j.Spec.RetentionPolicy, j.Spec.RetainAge = "age-based", metav1.Duration{Duration: 24 * time.Hour}
		}, ""},
		{"zero concurrency", func(j *longhorn.RecurringJob) { j.Spec.Concurrency = 0 }, "spec.concurrency"},
		{"bad group", func(j *longhorn.RecurringJob) { j.Spec.Groups = []string{"a b"} }, "spec.groups[0]"},
		{"bad label", func(j *longhorn.RecurringJob) { j.Spec.Labels = map[string]string{"k": "bad value"} }, "spec.labels[k]"},
		{"parameter on wrong task", func(j *longhorn.RecurringJob) { j.Spec.Parameters = map[string]string{"full-backup-interval": "5"} }, "spec.parameters[full-backup-interval]"},
		{"unknown parameter", func(j *longhorn.RecurringJob) { j.Spec.Parameters = map[string]string{"x": "5"} }, "spec.parameters[x]"},
		{"filesystem-trim without retain", func(j *longhorn.RecurringJob) { j.Spec.Task, j.Spec.Retain = "filesystem-trim", 0 }, ""},
		{"system-backup not supported yet", func(j *longhorn.RecurringJob) { j.Spec.Task, j.Spec.Retain = "system-backup", 0 }, "spec.task"},
		{"full-backup-interval on a backup job", func(j *longhorn.RecurringJob) {
			j.Spec.Task, j.Spec.Parameters = "backup", map[string]string{"full-backup-interval": "5"}
		}, ""},
		{"spec name differs", func(j *longhorn.RecurringJob) { j.Spec.Name = "other" }, "spec.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job()
			tc.mutate(j)
			checkField(t, validateRecurringJob(j, 100), tc.field)
		})
	}
	for _, task := range []longhorn.RecurringJobType{longhorn.RecurringJobTypeSystemBackup} {
		j := job()
		j.Spec.Task, j.Spec.Retain = task, 0
		if err := validateRecurringJob(j, 100); err == nil || !strings.Contains(err.Error(), "not supported yet") {
			t.Errorf("task %s: %v, want a refusal saying not supported yet", task, err)
		}
	}
	k := RecurringJobKind(fixedRetention(100))
	checkField(t, k.Validate(context.Background(), Request[*longhorn.RecurringJob]{Operation: admissionv1.Create, Object: job()}), "")
}

// A filesystem-trim job's retain becomes 0, as Longhorn mutates it: it
// keeps nothing.
func TestRecurringJobTrimRetain(t *testing.T) {
	j := &longhorn.RecurringJob{Spec: longhorn.RecurringJobSpec{Cron: "0 * * * *", Task: "filesystem-trim", Retain: 3, Concurrency: 1}}
	if got := applyJobOps(j, mutateRecurringJob(j)).Spec.Retain; got != 0 {
		t.Fatalf("filesystem-trim retain %d after mutation, want 0", got)
	}
	j.Spec.Task, j.Spec.Retain = "snapshot", 3
	if got := applyJobOps(j, mutateRecurringJob(j)).Spec.Retain; got != 3 {
		t.Fatalf("snapshot retain %d after mutation, want 3 kept", got)
	}
}

// A job created without concurrency gets Longhorn's default, 10.
func TestRecurringJobConcurrencyDefault(t *testing.T) {
	j := &longhorn.RecurringJob{Spec: longhorn.RecurringJobSpec{Cron: "0 * * * *", Task: "snapshot", Retain: 1}}
	if got := applyJobOps(j, mutateRecurringJob(j)).Spec.Concurrency; got != 10 {
		t.Fatalf("default concurrency %d, want 10", got)
	}
	j.Spec.Concurrency = 3
	if got := applyJobOps(j, mutateRecurringJob(j)).Spec.Concurrency; got != 3 {
		t.Fatalf("given concurrency became %d, want 3", got)
	}
}

func applyJobOps(j *longhorn.RecurringJob, ops []PatchOp) *longhorn.RecurringJob {
	for _, op := range ops {
		switch op.Path {
		case "/spec/name":
			j.Spec.Name = op.Value.(string)
		case "/spec/retentionPolicy":
			j.Spec.RetentionPolicy = op.Value.(longhorn.RecurringJobRetentionPolicy)
		case "/spec/concurrency":
			j.Spec.Concurrency = op.Value.(int)
		case "/spec/retain":
			j.Spec.Retain = op.Value.(int)
		}
	}
	return j
}

func TestValidateCron(t *testing.T) {
	good := []string{"* * * * *", "*/5 * * * *", "0 0 */7 * *", "0 12 * * MON-FRI", "15,45 1-5/2 1 JAN *", "0 0 * * 7",
		"@daily", "@every 1h30m", "0 0 ? * *"}
	bad := []string{"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
		"*/0 * * * *", "5-1 * * * *", "@sometimes", "@every -1s", "? * * * *", "a * * * *", "1,,2 * * * *"}
	for _, e := range good {
		if err := ValidateCron(e); err != nil {
			t.Errorf("%q rejected: %v", e, err)
		}
	}
	for _, e := range bad {
		if err := ValidateCron(e); err == nil {
			t.Errorf("%q accepted", e)
		}
	}
}

func FuzzValidateCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 * JAN-MAR MON", "@every 5m", "0 0 ? * *", "1,2,3 * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = ValidateCron(s) // must not panic
	})
}

func FuzzNormalizeVolumeSize(f *testing.F) {
	for _, s := range []string{`{"spec":{"size":"1Gi"}}`, `{"spec":{"size":"1"}}`, `{"spec":{"size":12}}`, `{"spec":null}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, ops, err := normalizeVolumeSize(raw)
		if err != nil {
			return
		}
		if len(ops) > 1 || out == nil {
			t.Fatalf("ops %v out %q", ops, out)
		}
	})
}
