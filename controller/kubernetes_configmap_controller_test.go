package controller

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// shippedConfigMap returns data[key] of the ConfigMap name in
// deploy/longhorn.yaml, so the parsers are tested on what users install.
func shippedConfigMap(t *testing.T, name, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "longhorn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var cm struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
			Data     map[string]string `json:"data"`
		}
		if yaml.Unmarshal([]byte(doc), &cm) == nil && cm.Kind == "ConfigMap" && cm.Metadata.Name == name {
			return cm.Data[key]
		}
	}
	t.Fatalf("deploy/longhorn.yaml has no ConfigMap %s", name)
	return ""
}

func TestParseStorageClassConfigMap(t *testing.T) {
	doc := shippedConfigMap(t, StorageClassConfigMapName, StorageClassConfigMapKey)
	sc, err := ParseStorageClassConfigMap(doc)
	if err != nil {
		t.Fatalf("shipped %s: %v", StorageClassConfigMapName, err)
	}
	if sc.Name != "longhorn" || sc.Provisioner != "driver.longhorn.io" || sc.Parameters["numberOfReplicas"] != "3" ||
		sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || sc.Annotations[LastAppliedConfigMapAnnotation] != doc ||
		sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != "Delete" || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		t.Fatalf("parsed %+v", sc)
	}
	bad := []struct{ name, doc, want string }{
		{"empty", "  \n", "is empty"},
		{"not yaml", "kind: [", "storageclass.yaml"},
		{"other kind", "kind: Deployment\nmetadata: {name: x}\nprovisioner: p\n", "kind"},
		{"no name", "kind: StorageClass\nprovisioner: p\n", "metadata.name"},
		{"no provisioner", "kind: StorageClass\nmetadata: {name: x}\n", "provisioner"},
		{"unknown field", "kind: StorageClass\nmetadata: {name: x}\nprovisioner: p\nparamters: {}\n", "paramters"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStorageClassConfigMap(tc.doc)
			if !errors.Is(err, ErrInvalidConfigMap) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalidConfigMap naming %q", err, tc.want)
			}
		})
	}
}

func TestDecideStorageClass(t *testing.T) {
	doc := "kind: StorageClass\nmetadata: {name: longhorn}\nprovisioner: driver.longhorn.io\n"
	made := func(text string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "longhorn",
			Annotations: map[string]string{LastAppliedConfigMapAnnotation: text}}}
	}
	deleting := made("old")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	cases := []struct {
		name string
		have *storagev1.StorageClass
		want storageClassStep
	}{
		{"missing", nil, scCreate},
		{"made from this text", made(doc), scKeep},
		{"made from an older text", made(doc + "parameters: {numberOfReplicas: \"2\"}\n"), scRecreate},
		{"made by hand", &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "longhorn"}}, scRecreate},
		{"old one still being deleted", deleting, scKeep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideStorageClass(tc.have, doc); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseDefaultResource(t *testing.T) {
	if d, err := ParseDefaultResource(shippedConfigMap(t, DefaultResourceConfigMapName, DefaultResourceConfigMapKey)); err != nil ||
		d.URL != nil || d.CredentialSecret != nil || d.PollInterval != nil {
		t.Fatalf("shipped (empty) %s: %+v %v", DefaultResourceConfigMapName, d, err)
	}
	d, err := ParseDefaultResource("backup-target: \"nfs://10.0.0.9:/backups\"\nbackup-target-credential-secret: \"\"\nbackupstore-poll-interval: \"60\"\n")
	if err != nil {
		t.Fatal(err)
	}
	spec := longhorn.BackupTargetSpec{CredentialSecret: "old", PollInterval: metav1.Duration{Duration: time.Hour}}
	d.applyTo(&spec)
	if spec.BackupTargetURL != "nfs://10.0.0.9:/backups" || spec.CredentialSecret != "" || spec.PollInterval.Duration != time.Minute {
		t.Fatalf("applied %+v", spec)
	}
	d, err = ParseDefaultResource("backupstore-poll-interval: 0\n")
	if err != nil || d.PollInterval == nil || *d.PollInterval != 0 || d.URL != nil {
		t.Fatalf("interval 0: %+v %v", d, err)
	}
	bad := []struct{ name, doc, want string }{
		{"negative interval", "backupstore-poll-interval: \"-5\"\n", "backupstore-poll-interval must be a whole number of seconds >= 0"},
		{"fractional interval", "backupstore-poll-interval: 1.5\n", "backupstore-poll-interval"},
		{"huge interval", "backupstore-poll-interval: \"99999999999999999\"\n", "backupstore-poll-interval"},
		{"unknown key", "backup-targt: s3://x@y/\n", `unknown key "backup-targt"`},
		{"not a map", "- a\n- b\n", "default-resource.yaml"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDefaultResource(tc.doc)
			if !errors.Is(err, ErrInvalidConfigMap) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalidConfigMap naming %q", err, tc.want)
			}
		})
	}
}

// The ConfigMaps come from the API server; their parsers must never panic.
func FuzzParseStorageClassConfigMap(f *testing.F) {
	f.Add("kind: StorageClass\nmetadata: {name: longhorn}\nprovisioner: driver.longhorn.io\nparameters: {numberOfReplicas: \"3\"}\n")
	f.Add("kind: [")
	f.Add("")
	f.Fuzz(func(t *testing.T, doc string) {
		sc, err := ParseStorageClassConfigMap(doc)
		if err == nil && (sc.Name == "" || sc.Provisioner == "" || sc.Annotations[LastAppliedConfigMapAnnotation] != doc) {
			t.Fatalf("accepted %q as %+v", doc, sc)
		}
	})
}

func FuzzParseDefaultResource(f *testing.F) {
	f.Add("backup-target: \"s3://b@us-east-1/\"\nbackupstore-poll-interval: \"300\"\n")
	f.Add("backupstore-poll-interval: -1")
	f.Add("{")
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := ParseDefaultResource(doc)
		if err == nil && d.PollInterval != nil && *d.PollInterval < 0 {
			t.Fatalf("accepted negative interval from %q", doc)
		}
	})
}
