package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/gdapi"
)

const (
	labelBackupVolume = "longhorn.io/backup-volume"
	labelBackupTarget = "longhorn.io/backup-target"
)

// put sends a JSON body to a collection URL (PUT /v1/backuptargets and
// /v1/backupvolumes have no links.self to follow) and decodes the answer.
func (f *fixture) put(t *testing.T, path string, body any) (int, gdapi.Object) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("PUT", f.base+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out gdapi.Object
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (f *fixture) backupTargetSpec(t *testing.T, name, what string, cond func(longhorn.BackupTargetSpec) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		bt, err := f.lh.LonghornV1beta2().BackupTargets(ns).Get(f.ctx, name, metav1.GetOptions{})
		return err == nil && cond(bt.Spec)
	})
}

// TestBackupTargetsThroughSchemas: create, sync (one and all), update and
// delete backup targets with the schema-driven client; bad input is a 4xx
// naming the field; the default target cannot be deleted.
func TestBackupTargetsThroughSchemas(t *testing.T) {
	f := setup(t)
	def := &longhorn.BackupTarget{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := f.lh.LonghornV1beta2().BackupTargets(ns).Create(f.ctx, def, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	bt, err := f.cli.Create("backupTarget", map[string]any{"name": "rb-s3", "backupTargetURL": "s3://bucket@us-east-1/lh",
		"credentialSecret": "s3-secret", "pollInterval": "60"})
	if err != nil || bt.Str("pollInterval") != "1m0s" || bt.Str("backupTargetURL") != "s3://bucket@us-east-1/lh" {
		t.Fatalf("create: %v %v", bt, err)
	}
	for body, want := range map[string]string{
		`{"name":"rb-bad","pollInterval":"-1"}`:               "pollInterval",
		`{"name":"rb-bad","backupTargetURL":"ftp://x"}`:       "backupTargetURL",
		`{"name":"Bad_Name"}`:                                 "name",
		`{"name":"rb-bad","credentialSecret":"no/slashes"}`:   "credentialSecret",
		`{"name":"rb-cifs","backupTargetURL":"cifs://h/s"}`:   "not supported yet",
		`{"name":"rb-s3","backupTargetURL":"s3://b@r/again"}`: "exists",
	} {
		var in map[string]any
		_ = json.Unmarshal([]byte(body), &in)
		if _, err := f.cli.Create("backupTarget", in); err == nil || apiStatus(err) < 400 || !strings.Contains(err.Error(), want) {
			t.Errorf("create %s: %v, want a 4xx/501 naming %q", body, err, want)
		}
	}
	if bt, err = f.cli.Action(bt, "backupTargetSync", map[string]any{"syncBackupTarget": true}); err != nil || bt.Str("name") != "rb-s3" {
		t.Fatalf("sync: %v %v", bt, err)
	}
	f.backupTargetSpec(t, "rb-s3", "syncRequestedAt", func(s longhorn.BackupTargetSpec) bool { return !s.SyncRequestedAt.IsZero() })
	bt, err = f.cli.Action(bt, "backupTargetUpdate", map[string]any{"backupTargetURL": "nfs://10.0.0.1:/export", "pollInterval": "5m0s"})
	if err != nil || bt.Str("backupTargetURL") != "nfs://10.0.0.1:/export" || bt.Str("pollInterval") != "5m0s" || bt.Str("credentialSecret") != "" {
		t.Fatalf("update: %v %v", bt, err)
	}
	if _, err := f.cli.Action(bt, "backupTargetUpdate", map[string]any{"name": "other"}); apiStatus(err) != 422 {
		t.Errorf("rename: %v", err)
	}
	before, _ := f.lh.LonghornV1beta2().BackupTargets(ns).Get(f.ctx, "default", metav1.GetOptions{})
	st, coll := f.put(t, "/v1/backuptargets", map[string]any{"syncAllBackupTargets": true})
	if st != 200 || len(coll.Data()) < 2 {
		t.Fatalf("sync all: %d %v", st, coll)
	}
	f.backupTargetSpec(t, "default", "default synced", func(s longhorn.BackupTargetSpec) bool {
		return s.SyncRequestedAt.After(before.Spec.SyncRequestedAt.Time)
	})
	d, err := f.cli.ByID("backupTarget", "default")
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if err := f.cli.Delete(d); apiStatus(err) != 409 {
		t.Errorf("delete default: %v, want 409", err)
	}
	if err := f.cli.Delete(bt); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if o, err := f.cli.ByID("backupTarget", "rb-s3"); o != nil || err != nil {
		eventually(t, "target gone", func() bool { o, err := f.cli.ByID("backupTarget", "rb-s3"); return o == nil && err == nil })
	}
}

// TestBackupsOfAVolume: snapshotBackup on an attached volume creates the
// Backup object Longhorn's controller takes; its progress shows in the
// volume's backupStatus, /v1/backups, the backup volume's actions and the
// /v1/ws/backups stream; backupDelete and DELETE remove the objects.
func TestBackupsOfAVolume(t *testing.T) {
	f := setup(t)
	target := &longhorn.BackupTarget{ObjectMeta: metav1.ObjectMeta{Name: "rb-vfs", Namespace: ns},
		Spec: longhorn.BackupTargetSpec{BackupTargetURL: "vfs:///var/lib/longhorn-backups"}}
	target, err := f.lh.LonghornV1beta2().BackupTargets(ns).Create(f.ctx, target, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "target in the cache", func() bool { _, err := f.ds.GetBackupTargetRO(f.ctx, "rb-vfs"); return err == nil })
	if _, err := f.cli.Create("volume", map[string]any{"name": "rb-vol", "size": "10Mi", "backupTargetName": "rb-nope"}); apiStatus(err) != 422 {
		t.Errorf("create with an unknown backup target: %v", err)
	}
	if _, err := f.cli.Create("volume", map[string]any{"name": "rb-vol", "size": "10Mi", "numberOfReplicas": 1, "backupTargetName": "rb-vfs"}); err != nil {
		t.Fatal(err)
	}
	v := f.setVolumeStatus(t, "rb-vol", func(st *longhorn.VolumeStatus) {
		st.State, st.Robustness = longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy
	})
	if _, err := f.cli.Action(v, "snapshotBackup", map[string]any{"name": "snap-1"}); apiStatus(err) != 409 || !strings.Contains(err.Error(), "not available") {
		t.Errorf("backup to an unavailable target: %v", err)
	}
	target.Status.Available = true
	if _, err := f.lh.LonghornV1beta2().BackupTargets(ns).UpdateStatus(f.ctx, target, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "target available in the cache", func() bool { bt, _ := f.ds.GetBackupTargetRO(f.ctx, "rb-vfs"); return bt.Status.Available })
	if _, err := f.cli.Action(v, "snapshotBackup", map[string]any{"name": "snap-1", "backupMode": "sometimes"}); apiStatus(err) != 422 {
		t.Errorf("bad backupMode: %v", err)
	}
	ws, err := websocket.Dial(strings.Replace(f.base, "http", "ws", 1)+"/v1/ws/backups", "", f.base)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := f.cli.Action(v, "snapshotBackup", map[string]any{"name": "snap-1", "labels": map[string]string{"app": "db"}, "backupMode": "full"}); err != nil {
		t.Fatalf("snapshotBackup: %v", err)
	}
	var b *longhorn.Backup
	eventually(t, "Backup object", func() bool {
		list, err := f.lh.LonghornV1beta2().Backups(ns).List(f.ctx, metav1.ListOptions{LabelSelector: labelBackupVolume + "=rb-vol"})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		b = &list.Items[0]
		return true
	})
	if b.Labels[labelBackupTarget] != "rb-vfs" || b.Spec.SnapshotName != "snap-1" || b.Spec.Labels["app"] != "db" || b.Spec.BackupMode != "full" ||
		!strings.HasPrefix(b.Name, "backup-") {
		t.Fatalf("backup object %+v", b)
	}
	// As the backup controller would: in progress at 60 %.
	b.Status = longhorn.BackupStatus{State: longhorn.BackupStateInProgress, Progress: 60, SnapshotName: "snap-1", VolumeName: "rb-vol", BackupTargetName: "rb-vfs"}
	if _, err := f.lh.LonghornV1beta2().Backups(ns).UpdateStatus(f.ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStream(t, ws, b.Name, `"progress":60`)
	eventually(t, "volume backupStatus", func() bool {
		o, err := f.cli.ByID("volume", "rb-vol")
		return err == nil && strings.Contains(mustJSON(o["backupStatus"]), `"progress":60`)
	})
	all, err := f.cli.List("backup", nil)
	if err != nil || len(all) == 0 {
		t.Fatalf("backups: %v %v", all, err)
	}
	testBackupVolumeActions(t, f, b.Name)
}

func testBackupVolumeActions(t *testing.T, f *fixture, backup string) {
	// As the backup target controller would: the backup volume object.
	bv := &longhorn.BackupVolume{ObjectMeta: metav1.ObjectMeta{Name: "rb-vol-rb-vfs", Namespace: ns,
		Labels: map[string]string{labelBackupVolume: "rb-vol", labelBackupTarget: "rb-vfs"}},
		Spec: longhorn.BackupVolumeSpec{BackupTargetName: "rb-vfs", VolumeName: "rb-vol"}}
	if _, err := f.lh.LonghornV1beta2().BackupVolumes(ns).Create(f.ctx, bv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var o gdapi.Object
	eventually(t, "backup volume listed", func() bool { o, _ = f.cli.ByID("backupVolume", "rb-vol-rb-vfs"); return o != nil })
	if o.Str("volumeName") != "rb-vol" || o.Str("backupTargetName") != "rb-vfs" {
		t.Fatalf("backup volume %v", o)
	}
	list, err := f.cli.Action(o, "backupList", nil)
	if err != nil || len(list.Data()) != 1 || list.Data()[0].Str("name") != backup || list.Data()[0].Str("state") != "InProgress" {
		t.Fatalf("backupList: %v %v", list, err)
	}
	if list, err = f.cli.Action(o, "backupListByVolume", map[string]any{"name": "rb-vol"}); err != nil || len(list.Data()) != 1 {
		t.Fatalf("backupListByVolume: %v %v", list, err)
	}
	got, err := f.cli.Action(o, "backupGet", map[string]any{"name": backup})
	if err != nil || got.Str("snapshotName") != "snap-1" || got.Str("backupTargetName") != "rb-vfs" {
		t.Fatalf("backupGet: %v %v", got, err)
	}
	if _, err := f.cli.Action(o, "backupGet", map[string]any{"name": "backup-none"}); apiStatus(err) != 404 {
		t.Errorf("backupGet missing: %v", err)
	}
	if _, err := f.cli.Action(o, "backupVolumeSync", map[string]any{"syncBackupVolume": true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "backup volume sync requested", func() bool {
		cur, err := f.lh.LonghornV1beta2().BackupVolumes(ns).Get(f.ctx, bv.Name, metav1.GetOptions{})
		return err == nil && !cur.Spec.SyncRequestedAt.IsZero()
	})
	if st, coll := f.put(t, "/v1/backupvolumes", map[string]any{"syncAllBackupVolumes": true}); st != 200 || len(coll.Data()) == 0 {
		t.Errorf("sync all backup volumes: %d %v", st, coll)
	}
	if _, err := f.cli.Action(o, "backupDelete", map[string]any{"name": backup}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "backup deleted", func() bool {
		_, err := f.lh.LonghornV1beta2().Backups(ns).Get(f.ctx, backup, metav1.GetOptions{})
		return err != nil
	})
	if err := f.cli.Delete(o); err != nil {
		t.Fatal(err)
	}
	eventually(t, "backup volume deleted", func() bool {
		_, err := f.lh.LonghornV1beta2().BackupVolumes(ns).Get(f.ctx, bv.Name, metav1.GetOptions{})
		return err != nil
	})
}

// waitStream reads stream messages until one holds name and want.
func waitStream(t *testing.T, ws *websocket.Conn, name, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	_ = ws.SetReadDeadline(deadline)
	for {
		var msg string
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			t.Fatalf("stream: %v (waiting for %s with %s)", err, name, want)
		}
		if strings.Contains(msg, `"name":"`+name+`"`) && strings.Contains(msg, want) {
			return
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRestoreVolumeCreate: create takes fromBackup (a restore) and standby
// (a disaster recovery volume); the webhook's check of the backup URL
// answers 422 naming the field.
func TestRestoreVolumeCreate(t *testing.T) {
	f := setup(t)
	url := "vfs:///var/lib/longhorn-backups?backup=backup-0123456789abcdef&volume=rb-src"
	if _, err := f.cli.Create("volume", map[string]any{"name": "rb-restore", "size": "10Mi", "numberOfReplicas": 1, "fromBackup": url}); err != nil {
		t.Fatalf("create from backup: %v", err)
	}
	stored, err := f.lh.LonghornV1beta2().Volumes(ns).Get(f.ctx, "rb-restore", metav1.GetOptions{})
	if err != nil || stored.Spec.FromBackup != url {
		t.Fatalf("stored %+v %v", stored, err)
	}
	if _, err := f.cli.Create("volume", map[string]any{"name": "rb-dr", "size": "10Mi", "numberOfReplicas": 1, "fromBackup": url,
		"standby": true, "frontend": ""}); err != nil {
		t.Fatalf("create standby: %v", err)
	}
	if stored, err = f.lh.LonghornV1beta2().Volumes(ns).Get(f.ctx, "rb-dr", metav1.GetOptions{}); err != nil || !stored.Spec.Standby {
		t.Fatalf("standby %+v %v", stored, err)
	}
	if _, err := f.cli.Create("volume", map[string]any{"name": "rb-bad", "size": "10Mi", "fromBackup": "no-scheme"}); apiStatus(err) != 422 ||
		!strings.Contains(err.Error(), "fromBackup") {
		t.Errorf("bad fromBackup: %v", err)
	}
}
