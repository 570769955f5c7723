package manager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// manifestDoc returns the YAML document of ConfigMap name in
// deploy/longhorn.yaml.
func manifestDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "longhorn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var obj struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &obj) == nil && obj.Kind == "ConfigMap" && obj.Metadata.Name == name {
			return doc
		}
	}
	t.Fatalf("deploy/longhorn.yaml has no ConfigMap %s", name)
	return ""
}

// testChartConfigMaps applies the manifest's longhorn-storageclass and
// longhorn-default-resource ConfigMaps and checks what the managers make of
// them: StorageClass longhorn (recreated when the ConfigMap changes) and
// BackupTarget default.
func testChartConfigMaps(t *testing.T, c *cluster) {
	scDoc := manifestDoc(t, "longhorn-storageclass")
	start := time.Now()
	if out, err := c.kubectl(scDoc, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply longhorn-storageclass: %v\n%s", err, out)
	}
	var uid string
	c.eventually("StorageClass longhorn from the ConfigMap", 30*time.Second, func() (bool, string) {
		sc, err := c.kube.StorageV1().StorageClasses().Get(c.ctx, "longhorn", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		uid = string(sc.UID)
		return sc.Provisioner == "driver.longhorn.io" && sc.Parameters["numberOfReplicas"] == "3" &&
			sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true", fmt.Sprintf("%+v", sc.Parameters)
	})
	t.Logf("MEASURE ConfigMap -> StorageClass: %v", time.Since(start).Round(time.Millisecond))
	changed := strings.Replace(scDoc, `numberOfReplicas: "3"`, `numberOfReplicas: "2"`, 1)
	if changed == scDoc {
		t.Fatal(`the manifest's StorageClass has no numberOfReplicas: "3"`)
	}
	if out, err := c.kubectl(changed, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply changed longhorn-storageclass: %v\n%s", err, out)
	}
	c.eventually("StorageClass longhorn recreated with 2 replicas", 30*time.Second, func() (bool, string) {
		sc, err := c.kube.StorageV1().StorageClasses().Get(c.ctx, "longhorn", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return string(sc.UID) != uid && sc.Parameters["numberOfReplicas"] == "2", fmt.Sprintf("uid %s %+v", sc.UID, sc.Parameters)
	})
	// A StorageClass deleted by hand comes back.
	if err := c.kube.StorageV1().StorageClasses().Delete(c.ctx, "longhorn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually("deleted StorageClass recreated", 30*time.Second, func() (bool, string) {
		sc, err := c.kube.StorageV1().StorageClasses().Get(c.ctx, "longhorn", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sc.Parameters["numberOfReplicas"] == "2", fmt.Sprintf("%+v", sc.Parameters)
	})

	// The target's address is a loopback one nothing serves: the managers
	// poll it, and their traffic stays on the machine.
	rsDoc := manifestDoc(t, "longhorn-default-resource")
	rsDoc = strings.Replace(rsDoc, "default-resource.yaml: |-",
		"default-resource.yaml: |-\n    backup-target: \"nfs://127.0.0.254:/backups\"\n    backupstore-poll-interval: \"60\"", 1)
	if out, err := c.kubectl(rsDoc, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply longhorn-default-resource: %v\n%s", err, out)
	}
	c.eventually("BackupTarget default from the ConfigMap", 30*time.Second, func() (bool, string) {
		bt, err := c.lh.LonghornV1beta2().BackupTargets(ns).Get(c.ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return bt.Spec.BackupTargetURL == "nfs://127.0.0.254:/backups" && bt.Spec.PollInterval.Duration == time.Minute,
			fmt.Sprintf("%+v", bt.Spec)
	})
}
