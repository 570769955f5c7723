package manager_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// admissionCase is one `kubectl apply` and what must come of it: rejected
// with a message naming wantField, or accepted.
type admissionCase struct {
	name      string
	manifest  string
	wantField string // "" = accepted
	wantLimit string // for a rejection: text of the limit the message must give
}

func volumeYAML(name, spec string) string {
	return fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Volume\nmetadata: {name: %s, namespace: %s}\nspec: {%s}\n", name, ns, spec)
}

func settingYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Setting\nmetadata: {name: %s, namespace: %s}\nvalue: %q\n", name, ns, value)
}

func nodeYAML(path, tag string) string {
	return fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: Node
metadata: {name: wh-node, namespace: %s}
spec: {name: wh-node, allowScheduling: false, tags: [%q], disks: {d1: {diskType: filesystem, path: %q, allowScheduling: false, storageReserved: 0, tags: []}}}
`, ns, tag, path)
}

// objectKey is "kind/name" of a one-object manifest.
func objectKey(manifest string) string {
	kind, name := "", ""
	for _, l := range strings.Split(manifest, "\n") {
		if k, ok := strings.CutPrefix(l, "kind: "); ok {
			kind = k
		}
		if m, ok := strings.CutPrefix(l, "metadata: {name: "); ok {
			name, _, _ = strings.Cut(m, ",")
		}
	}
	return kind + "/" + name
}

// checkAdmission applies one case with kubectl and checks the outcome.
func (c *cluster) checkAdmission(t *testing.T, tc admissionCase) {
	out, err := c.kubectl(tc.manifest, "apply", "-f", "-")
	switch {
	case tc.wantField == "" && err != nil:
		t.Errorf("%s: rejected: %s", tc.name, out)
	case tc.wantField != "" && err == nil:
		t.Errorf("%s: accepted, want a rejection naming %s", tc.name, tc.wantField)
	case tc.wantField != "" && !strings.Contains(out, tc.wantField+":"):
		// Either the webhook ("denied the request: FIELD: ...") or the
		// CRD schema ("FIELD: Unsupported value ...") refuses it.
		t.Errorf("%s: message does not name %s: %s", tc.name, tc.wantField, out)
	case tc.wantField != "" && !strings.Contains(out, tc.wantLimit):
		t.Errorf("%s: message does not give the limit %q: %s", tc.name, tc.wantLimit, out)
	}
}

func testWebhookRules(t *testing.T, c *cluster) {
	// The managers create every Setting with its default at start; applying
	// one before that races with the creation (AlreadyExists). About 120
	// creates through the admission webhook: slow on a loaded machine.
	c.eventually("default settings created", 120*time.Second, func() (bool, string) {
		for _, name := range []string{"storage-over-provisioning-percentage", "default-replica-count", "auto-salvage"} {
			if _, err := c.lh.LonghornV1beta2().Settings(ns).Get(c.ctx, name, metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
	long := strings.Repeat("a", 41)
	cases := []admissionCase{
		{"volume size quantity accepted", volumeYAML("wh-size", "size: 100Mi, numberOfReplicas: 1, frontend: nbd"), "", ""},
		{"volume size garbage rejected", volumeYAML("wh-size-bad", "size: lots, numberOfReplicas: 1"), "spec.size", "quantity"},
		{"volume zero size rejected", volumeYAML("wh-size-bad", "size: \"0\", numberOfReplicas: 1"), "spec.size", "greater than 0"},
		{"odd size accepted (rounded up to 2 MiB)", volumeYAML("wh-round", "size: 5Mi, numberOfReplicas: 1"), "", ""},
		{"volume shrink rejected", volumeYAML("wh-size", "size: 50Mi, numberOfReplicas: 1, frontend: nbd"), "spec.size", "only grow"},
		{"volume grow accepted", volumeYAML("wh-size", "size: 200Mi, numberOfReplicas: 1, frontend: nbd"), "", ""},
		{"21 replicas rejected", volumeYAML("wh-rep", "size: 10Mi, numberOfReplicas: 21"), "spec.numberOfReplicas", "1-20"},
		{"-1 replicas rejected", volumeYAML("wh-rep", "size: 10Mi, numberOfReplicas: -1"), "spec.numberOfReplicas", "1-20"},
		{"1 replica accepted", volumeYAML("wh-rep1", "size: 10Mi, numberOfReplicas: 1"), "", ""},
		{"20 replicas accepted", volumeYAML("wh-rep", "size: 10Mi, numberOfReplicas: 20"), "", ""},
		{"bad data locality rejected", volumeYAML("wh-loc", "size: 10Mi, dataLocality: nearby"), "spec.dataLocality", ""},
		{"best-effort locality accepted", volumeYAML("wh-loc", "size: 10Mi, dataLocality: best-effort"), "", ""},
		{"bad access mode rejected", volumeYAML("wh-am", "size: 10Mi, accessMode: rw"), "spec.accessMode", ""},
		{"bad frontend rejected", volumeYAML("wh-fe", "size: 10Mi, frontend: scsi"), "spec.frontend", ""},
		{"41-char name rejected", volumeYAML(long, "size: 10Mi"), "metadata.name", "the limit is 40"},
		{"64-char name rejected with the same limit", volumeYAML(strings.Repeat("b", 64), "size: 10Mi"), "metadata.name", "is 64 characters; the limit is 40"},
		{"1.5Gi accepted", volumeYAML("wh-1-5gi", "size: 1.5Gi, numberOfReplicas: 1"), "", ""},
		{"no size accepted (2 MiB, as Longhorn)", volumeYAML("wh-nosize", "numberOfReplicas: 1"), "", ""},
		{"40-char name accepted", volumeYAML(long[:40], "size: 10Mi"), "", ""},
		{"setting out of range rejected", settingYAML("storage-over-provisioning-percentage", "-1"), "value", "at least 0"},
		{"setting wrong type rejected", settingYAML("auto-salvage", "maybe"), "value", "true or false"},
		{"setting type accepted", settingYAML("auto-salvage", "true"), "", ""},
		{"setting in range accepted", settingYAML("storage-over-provisioning-percentage", "150"), "", ""},
		{"replica count setting 21 rejected", settingYAML("default-replica-count", "21"), "value", "at most 20"},
		{"unknown setting rejected", settingYAML("no-such-setting", "1"), "metadata.name", ""},
		{"relative disk path rejected", nodeYAML("var/lib/x", "ok"), "spec.disks[d1].path", ""},
		{"bad node tag rejected", nodeYAML("/var/lib/x", "a b"), "spec.tags[0]", ""},
		{"valid node accepted", nodeYAML("/var/lib/x", "fast"), "", ""},
		{"engine bad frontend rejected", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Engine\nmetadata: {name: wh-e-0, namespace: %s}\n"+
			"spec: {volumeName: wh, dataEngine: v1, desireState: stopped, frontend: scsi}\n", ns), "spec.frontend", ""},
		{"engine accepted", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Engine\nmetadata: {name: wh-e-0, namespace: %s}\n"+
			"spec: {volumeName: wh, dataEngine: v1, desireState: stopped, frontend: nbd}\n", ns), "", ""},
		{"replica bad data dir rejected", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Replica\nmetadata: {name: wh-r-1, namespace: %s}\n"+
			"spec: {volumeName: wh, dataEngine: v1, desireState: stopped, dataDirectoryName: ../etc}\n", ns), "spec.dataDirectoryName", ""},
		{"replica accepted", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Replica\nmetadata: {name: wh-r-1, namespace: %s}\n"+
			"spec: {volumeName: wh, dataEngine: v1, desireState: stopped, dataDirectoryName: wh-0123abcd}\n", ns), "", ""},
		{"bad cron rejected", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: RecurringJob\nmetadata: {name: wh-job, namespace: %s}\n"+
			"spec: {task: snapshot, cron: '61 * * * *', retain: 2, concurrency: 1}\n", ns), "spec.cron", ""},
		{"recurring job accepted", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: RecurringJob\nmetadata: {name: wh-job, namespace: %s}\n"+
			"spec: {task: snapshot, cron: '*/5 * * * *', retain: 2, concurrency: 1}\n", ns), "", ""},
		{"bad attacher type rejected", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: VolumeAttachment\nmetadata: {name: wh-va, namespace: %s}\n"+
			"spec: {volume: wh-va, attachmentTickets: {t1: {id: t1, type: me, nodeID: n1}}}\n", ns), "spec.attachmentTickets[t1].type", ""},
		{"volume attachment accepted", fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: VolumeAttachment\nmetadata: {name: wh-va, namespace: %s}\n"+
			"spec: {volume: wh-va, attachmentTickets: {longhorn-api-t1: {id: longhorn-api-t1, type: longhorn-api, nodeID: n1}}}\n", ns), "", ""},
	}
	// Cases on the same object run in order; different objects in parallel
	// (each kubectl takes about a second here).
	groups := map[string][]admissionCase{}
	var order []string
	for _, tc := range cases {
		k := objectKey(tc.manifest)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], tc)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, k := range order {
		wg.Add(1)
		go func(group []admissionCase) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, tc := range group {
				c.checkAdmission(t, tc)
			}
		}(groups[k])
	}
	wg.Wait()
	// The accepted quantity was rounded up to bytes in a 2 MiB multiple.
	if v := c.volume("wh-size"); v == nil || v.Spec.Size != 200<<20 || v.Spec.Image != image || v.Spec.NumberOfReplicas != 1 {
		t.Errorf("wh-size stored as %+v", v)
	}
	if v := c.volume("wh-round"); v == nil || v.Spec.Size != 6<<20 {
		t.Errorf("5Mi was not rounded up to 6 MiB: %+v", v)
	}
	if v := c.volume("wh-loc"); v == nil || v.Spec.NumberOfReplicas != 3 {
		t.Errorf("numberOfReplicas 0 did not become default-replica-count 3: %+v", v)
	}
	if v := c.volume("wh-1-5gi"); v == nil || v.Spec.Size != 1610612736 {
		t.Errorf("1.5Gi not stored as 1610612736 bytes: %+v", v)
	}
	if v := c.volume("wh-nosize"); v == nil || v.Spec.Size != 2<<20 {
		t.Errorf("a volume without size did not get 2 MiB: %+v", v)
	}
	for _, obj := range []string{"volumes.longhorn.io/wh-size", "volumes.longhorn.io/wh-1-5gi", "volumes.longhorn.io/wh-nosize", "volumes.longhorn.io/wh-rep", "volumes.longhorn.io/wh-rep1", "volumes.longhorn.io/wh-round", "volumes.longhorn.io/wh-loc",
		"volumes.longhorn.io/" + long[:40], "engines.longhorn.io/wh-e-0", "replicas.longhorn.io/wh-r-1",
		"recurringjobs.longhorn.io/wh-job", "volumeattachments.longhorn.io/wh-va", "nodes.longhorn.io/wh-node"} {
		if out, err := c.kubectl("", "-n", ns, "delete", obj, "--wait=false"); err != nil {
			t.Errorf("delete %s: %v %s", obj, err, out)
		}
	}
	c.eventually("webhook test volumes deleted", 90*time.Second, func() (bool, string) {
		vs, _ := c.lh.LonghornV1beta2().Volumes(ns).List(c.ctx, metav1.ListOptions{})
		var left []string
		for _, v := range vs.Items {
			left = append(left, v.Name)
		}
		return len(left) == 0, strings.Join(left, ",")
	})
}
