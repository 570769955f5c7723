package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func testBackupTarget(name string, available bool) *longhorn.BackupTarget {
	bt := &longhorn.BackupTarget{ObjectMeta: objMeta(name), Spec: longhorn.BackupTargetSpec{BackupTargetURL: "vfs:///tmp/bs"},
		Status: longhorn.BackupTargetStatus{Available: available}}
	if !available {
		bt.Status.Conditions = []longhorn.Condition{{Type: longhorn.BackupTargetConditionTypeUnavailable, Status: "True", Message: "no route"}}
	}
	return bt
}

func testBackupVolume(volume, target string) *longhorn.BackupVolume {
	return &longhorn.BackupVolume{ObjectMeta: objMeta(volume), Spec: longhorn.BackupVolumeSpec{BackupTargetName: target, VolumeName: volume},
		Status: longhorn.BackupVolumeStatus{Size: "1073741824", LastBackupName: "backup-1", DataStored: "4096"}}
}

func testBackup(name, volume, target string, state longhorn.BackupState) *longhorn.Backup {
	b := &longhorn.Backup{ObjectMeta: objMeta(name), Spec: longhorn.BackupSpec{SnapshotName: "snap"},
		Status: longhorn.BackupStatus{State: state, Progress: 40}}
	b.Labels = map[string]string{labelBackupVolume: volume, labelBackupTarget: target}
	return b
}

func TestParseBackupTargetSpec(t *testing.T) {
	for _, c := range []struct {
		url, secret, poll string
		status            int
		want              time.Duration
		field             string
	}{
		{"s3://b@us-east-1/", "s3-secret", "300", 0, 300 * time.Second, ""},
		{"nfs://h:/export", "", "", 0, 300 * time.Second, ""},
		{"", "", "0", 0, 0, ""},
		{"vfs:///d", "", "1m30s", 0, 90 * time.Second, ""},
		{"cifs://h/share", "", "", 501, 0, "cifs"},
		{"ftp://x", "", "", 422, 0, "backupTargetURL"},
		{"bucket", "", "", 422, 0, "backupTargetURL"},
		{"s3://b@r/", "Bad_Name", "", 422, 0, "credentialSecret"},
		{"s3://b@r/", "", "-5", 422, 0, "pollInterval"},
		{"s3://b@r/", "", "soon", 422, 0, "pollInterval"},
	} {
		spec, err := ParseBackupTargetSpec(BackupTarget{BackupTargetURL: c.url, CredentialSecret: c.secret, PollInterval: c.poll})
		if c.status == 0 {
			if err != nil || spec.PollInterval.Duration != c.want || spec.BackupTargetURL != c.url {
				t.Errorf("%+v: %+v %v", c, spec, err)
			}
			continue
		}
		if err == nil || toAPIError(err).Status != c.status || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestSnapshotBackupObject: the Backup object carries Longhorn's labels,
// the snapshot, the mode and the volume's KubernetesStatus; bad input is a
// 422 naming the field.
func TestSnapshotBackupObject(t *testing.T) {
	v := testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy)
	v.Spec.BackupTargetName = "t2"
	v.Status.KubernetesStatus.PVCName = "data"
	b, err := NewSnapshotBackup(v, SnapshotInput{Name: "snap", Labels: map[string]string{"app": "db"}, BackupMode: "full"}, "backup-x")
	if err != nil {
		t.Fatal(err)
	}
	if b.Labels[labelBackupVolume] != "vol" || b.Labels[labelBackupTarget] != "t2" || b.Spec.SnapshotName != "snap" ||
		b.Spec.BackupMode != longhorn.BackupModeFull || b.Spec.Labels["app"] != "db" ||
		!strings.Contains(b.Spec.Labels[kubernetesStatusLabel], `"pvcName":"data"`) {
		t.Errorf("backup %+v", b)
	}
	for in, field := range map[string]SnapshotInput{
		"name":       {},
		"backupMode": {Name: "snap", BackupMode: "differential"},
		"labels":     {Name: "snap", Labels: map[string]string{"a/b/c": "x"}},
	} {
		if _, err := NewSnapshotBackup(v, field, "b"); err == nil || toAPIError(err).Status != 422 || !strings.Contains(err.Error(), in) {
			t.Errorf("%s: %v", in, err)
		}
	}
	if n := NewBackupName(); !strings.HasPrefix(n, "backup-") || len(n) != len("backup-")+16 {
		t.Errorf("name %q", n)
	}
}

// TestBackupRoutes: backup volumes and backups list and by name; the
// backup volume actions; snapshotBackup refuses an unavailable target and
// a missing snapshot and creates the Backup object otherwise.
func TestBackupRoutes(t *testing.T) {
	snaps := &fakeSnapshots{snaps: map[string]*engineapi.Snapshot{"snap": {Name: "snap"}}}
	e := newFakeEnv(t, Options{Snapshots: snaps},
		testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy),
		testBackupTarget("default", true), testBackupTarget("down", false), testBackupVolume("vol", "default"),
		testBackup("backup-1", "vol", "default", longhorn.BackupStateInProgress), testBackup("backup-2", "other", "default", longhorn.BackupStateCompleted))
	var bvs struct{ Data []BackupVolume }
	if st := e.do("GET", "/v1/backupvolumes", nil, &bvs); st != 200 || len(bvs.Data) != 1 || bvs.Data[0].VolumeName != "vol" ||
		bvs.Data[0].Actions[ActionBackupList] == "" || bvs.Data[0].DataStored != "4096" {
		t.Fatalf("backupvolumes %d %+v", st, bvs)
	}
	var list struct{ Data []Backup }
	if st := e.do("POST", "/v1/backupvolumes/vol?action=backupList", nil, &list); st != 200 || len(list.Data) != 1 ||
		list.Data[0].Name != "backup-1" || list.Data[0].Progress != 40 || list.Data[0].VolumeName != "vol" {
		t.Fatalf("backupList %d %+v", st, list)
	}
	if st := e.do("GET", "/v1/backups", nil, &list); st != 200 || len(list.Data) != 2 {
		t.Fatalf("backups %d %+v", st, list)
	}
	if st := e.do("POST", "/v1/backupvolumes/vol?action=backupListByVolume", map[string]string{"name": "other"}, &list); st != 200 ||
		len(list.Data) != 1 || list.Data[0].Name != "backup-2" {
		t.Fatalf("backupListByVolume %d %+v", st, list)
	}
	var b Backup
	if st := e.do("POST", "/v1/backupvolumes/vol?action=backupGet", map[string]string{"name": "backup-2"}, &b); st != 404 {
		t.Errorf("backupGet of another volume's backup: %d", st)
	}
	if st := e.do("POST", "/v1/backupvolumes/vol?action=backupGet", map[string]string{}, &b); st != 422 {
		t.Errorf("backupGet without name: %d", st)
	}
	if st := e.do("POST", "/v1/backupvolumes/vol?action=backupDelete", map[string]string{"name": "backup-1"}, nil); st != 200 {
		t.Errorf("backupDelete: %d", st)
	}
	eventually(t, "backup-1 gone", func() bool { _, err := e.ds.GetBackupRO(e.ctx(), "backup-1"); return err != nil })

	var errOut Error
	if st := e.do("POST", "/v1/volumes/vol?action=snapshotBackup", map[string]string{"name": "nope"}, &errOut); st != 404 {
		t.Errorf("missing snapshot: %d %+v", st, errOut)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=updateBackupTargetName", map[string]string{"backupTargetName": "gone"}, &errOut); st != 422 {
		t.Errorf("unknown target: %d %+v", st, errOut)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=updateBackupTargetName", map[string]string{"backupTargetName": "down"}, nil); st != 200 {
		t.Fatalf("updateBackupTargetName: %d", st)
	}
	eventually(t, "target down", func() bool { v, _ := e.ds.GetVolumeRO(e.ctx(), "vol"); return v.Spec.BackupTargetName == "down" })
	if st := e.do("POST", "/v1/volumes/vol?action=snapshotBackup", map[string]string{"name": "snap"}, &errOut); st != 409 ||
		!strings.Contains(errOut.Message, "no route") {
		t.Errorf("unavailable target: %d %+v", st, errOut)
	}
	e.do("POST", "/v1/volumes/vol?action=updateBackupTargetName", map[string]string{"backupTargetName": "default"}, nil)
	eventually(t, "target default", func() bool { v, _ := e.ds.GetVolumeRO(e.ctx(), "vol"); return v.Spec.BackupTargetName == "default" })
	var vol Volume
	if st := e.do("POST", "/v1/volumes/vol?action=snapshotBackup", map[string]string{"name": "snap"}, &vol); st != http.StatusOK || vol.Name != "vol" {
		t.Fatalf("snapshotBackup: %d %+v", st, vol)
	}
	eventually(t, "backup object", func() bool {
		objs, _ := e.ds.ListBackupsRO(e.ctx(), backupsOf("vol", "default"))
		return len(objs) == 1 && objs[0].Spec.SnapshotName == "snap"
	})
}

func (e *apiEnv) ctx() context.Context { return context.Background() }

// TestBackupVolumeStream: /v1/ws/backupvolumes sends the backup volumes on
// connect and again when a BackupVolume changes.
func TestBackupVolumeStream(t *testing.T) {
	e := newFakeEnv(t, Options{}, testBackupTarget("default", true), testBackupVolume("vol", "default"))
	conn := dialStream(t, e, "/v1/ws/backupvolumes")
	next := func() string {
		t.Helper()
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		var msg string
		if err := websocket.Message.Receive(conn, &msg); err != nil {
			t.Fatalf("receive: %v", err)
		}
		return msg
	}
	if msg := next(); !strings.Contains(msg, `"resourceType":"backupVolume"`) || !strings.Contains(msg, `"lastBackupName":"backup-1"`) {
		t.Fatalf("first message %s", msg)
	}
	bv, err := e.ds.GetBackupVolume(e.ctx(), "vol")
	if err != nil {
		t.Fatal(err)
	}
	bv.Status.LastBackupName = "backup-2"
	if _, err := e.ds.UpdateBackupVolumeStatus(e.ctx(), bv); err != nil {
		t.Fatal(err)
	}
	if msg := next(); !strings.Contains(msg, `"lastBackupName":"backup-2"`) {
		t.Fatalf("after the change %s", msg)
	}
}
