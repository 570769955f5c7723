package app

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

func TestPreUpgradeCheckReadsInstalledVersion(t *testing.T) {
	ctx := context.Background()
	setting := func(v string) *longhorn.Setting {
		return &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: "current-longhorn-version", Namespace: "longhorn-system"}, Value: v}
	}
	cases := []struct {
		name, installed, target, want string
		fresh, fails                  bool
	}{
		{name: "fresh install", fresh: true, target: "v1.8.0", want: "fresh install"},
		{name: "next minor", installed: "v1.7.2", target: "v1.8.0", want: "supported path"},
		{name: "skipped minor", installed: "v1.6.2", target: "v1.8.0", fails: true, want: "upgrade to v1.7 first"},
		{name: "downgrade", installed: "v1.8.1", target: "v1.8.0", fails: true, want: "downgrading"},
		{name: "dev build", installed: "v1.8.0", target: "abc1234-dirty", want: "not a release version"},
	}
	for _, c := range cases {
		cs := fake.NewSimpleClientset()
		if !c.fresh {
			cs = fake.NewSimpleClientset(setting(c.installed))
		}
		msg, err := preUpgradeCheck(ctx, cs, "longhorn-system", c.target)
		got := msg
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != c.fails || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q (err %v), want fails=%v and %q", c.name, got, err, c.fails, c.want)
		}
	}
}
