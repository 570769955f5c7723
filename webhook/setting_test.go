package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// fakeSettingStore answers with fixed attached volumes and NADs.
type fakeSettingStore struct {
	attached []string
	nads     map[string]bool // "ns/name"
}

func (f fakeSettingStore) AttachedVolumes(context.Context) ([]string, error) { return f.attached, nil }

func (f fakeSettingStore) NetworkAttachmentDefinitionExists(_ context.Context, ns, name string) (bool, error) {
	return f.nads[ns+"/"+name], nil
}

func settingReq(op admissionv1.Operation, name, old, value string) Request[*longhorn.Setting] {
	s := &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	r := Request[*longhorn.Setting]{Operation: op, Name: name, Object: s, HasNew: true}
	if op == admissionv1.Update {
		r.Old, r.HasOld = &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: old}, true
	}
	return r
}

func TestStorageNetworkSettingAdmission(t *testing.T) {
	nads := map[string]bool{"kube-system/storage": true}
	many := make([]string, 25)
	for i := range many {
		many[i] = fmt.Sprintf("v%02d", i)
	}
	cases := []struct {
		name     string
		attached []string
		op       admissionv1.Operation
		old, val string
		want     []string // substrings of the refusal; nil = accepted
	}{
		{"empty accepted", nil, admissionv1.Update, "kube-system/storage", "", nil},
		{"existing NAD accepted", nil, admissionv1.Update, "", "kube-system/storage", nil},
		{"existing NAD on create accepted", nil, admissionv1.Create, "", "kube-system/storage", nil},
		{"no slash refused", nil, admissionv1.Update, "", "storage", []string{"value:", "<namespace>/<network-attachment-definition>"}},
		{"empty name refused", nil, admissionv1.Update, "", "kube-system/", []string{"value:", "<namespace>/"}},
		{"two slashes refused", nil, admissionv1.Update, "", "a/b/c", []string{"value:", "<namespace>/"}},
		{"missing NAD refused", nil, admissionv1.Update, "", "kube-system/nope", []string{"value:", "NetworkAttachmentDefinition kube-system/nope not found"}},
		{"missing NAD on create refused", nil, admissionv1.Create, "", "default/nope", []string{"not found"}},
		{"attached refused with the list", []string{"vol-a", "vol-b"}, admissionv1.Update, "", "kube-system/storage",
			[]string{"value:", "only change while all volumes are detached", "2 attached: vol-a, vol-b"}},
		{"clearing while attached refused", []string{"vol-a"}, admissionv1.Update, "kube-system/storage", "", []string{"1 attached: vol-a"}},
		{"long list cut", many, admissionv1.Update, "", "kube-system/storage", []string{"25 attached: v00,", "v19 and 5 more"}},
		{"unchanged value while attached accepted", []string{"vol-a"}, admissionv1.Update, "kube-system/storage", "kube-system/storage", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := SettingKind(fakeSettingStore{attached: tc.attached, nads: nads})
			err := k.Validate(context.Background(), settingReq(tc.op, "storage-network", tc.old, tc.val))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want a refusal with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestOtherSettingsIgnoreAttachedVolumes(t *testing.T) {
	k := SettingKind(fakeSettingStore{attached: []string{"vol-a"}})
	if err := k.Validate(context.Background(), settingReq(admissionv1.Update, "auto-salvage", "true", "false")); err != nil {
		t.Fatalf("auto-salvage refused while attached: %v", err)
	}
}

// A setting the product does not act on yet takes its default or an inert
// value; anything else is refused with "not supported yet", on create and
// update. An unchanged value (stored before the refusal existed) passes.
func TestNotSupportedSettingRefused(t *testing.T) {
	k := SettingKind(fakeSettingStore{})
	cases := []struct {
		op            admissionv1.Operation
		name, old, to string
		refused       bool
	}{
		{admissionv1.Update, "node-down-pod-deletion-policy", "do-nothing", "delete-statefulset-pod", true},
		{admissionv1.Create, "node-down-pod-deletion-policy", "", "delete-both-statefulset-and-deployment-pod", true},
		{admissionv1.Create, "node-down-pod-deletion-policy", "", "do-nothing", false},
		{admissionv1.Update, "node-drain-policy", "block-if-contains-last-replica", "block-for-eviction", false},
		{admissionv1.Create, "node-drain-policy", "", "block-for-eviction-if-contains-last-replica", false},
		{admissionv1.Update, "upgrade-checker", "true", "false", false},
		{admissionv1.Update, "v2-data-engine", "false", "true", true},
		{admissionv1.Update, "snapshot-data-integrity-immediate-check-after-snapshot-creation", `{"v1":"false","v2":"false"}`, "true", true},
		{admissionv1.Update, "failed-backup-ttl", "720", "720", false},
		{admissionv1.Update, "default-replica-count", `{"v1":"3","v2":"3"}`, "2", false},
	}
	for _, c := range cases {
		err := k.Validate(context.Background(), settingReq(c.op, c.name, c.old, c.to))
		if (err != nil) != c.refused {
			t.Errorf("%s %s %q->%q: err %v, want refused=%v", c.op, c.name, c.old, c.to, err, c.refused)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "not supported yet") || !strings.Contains(err.Error(), c.name)) {
			t.Errorf("%s=%q: refusal %q should name the setting and say not supported yet", c.name, c.to, err)
		}
	}
}
