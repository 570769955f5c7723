package upgrade

import (
	"strings"
	"testing"
)

// The cases of Longhorn's upgrade path table (docs "Upgrade Path Enforcement"), plus
// development builds and fresh installs.
func TestCheckPath(t *testing.T) {
	cases := []struct {
		current, target string
		allowed         bool
		skipped         bool
		errHas          string
	}{
		{"v1.4.2", "v1.5.1", true, false, ""},
		{"v1.5.0", "v1.5.1", true, false, ""},
		{"v1.5.1", "v1.5.1", true, false, ""},
		{"v1.30.0", "v2.0.0", true, false, ""},
		{"v0.1.0-dev", "v0.1.0", true, false, ""},
		{"v1.5.0-rc1", "v1.5.0-rc2", true, false, ""},
		{"v1.3.3", "v1.5.1", false, false, "upgrade to v1.4 first"},
		{"v1.2.6", "v1.5.1", false, false, "more than one minor"},
		{"v1.6.0", "v1.5.1", false, false, "downgrading is not supported"},
		{"v1.5.1", "v1.5.0", false, false, "downgrading"},
		{"v1.5.0", "v1.5.0-rc1", false, false, "downgrading"},
		{"v1.30.0", "v2.1.0", false, false, "first minor (v2.0.x)"},
		{"v1.9.0", "v3.0.0", false, false, "more than one major"},
		{"", "v1.5.0", true, true, ""},
		{"9161769-dirty", "v1.5.0", true, true, ""},
		{"v1.5.0", "1.6.0", true, true, ""},
	}
	for _, c := range cases {
		v, err := CheckPath(c.current, c.target)
		if c.allowed != (err == nil) || v.Allowed != c.allowed {
			t.Errorf("%q -> %q: verdict %+v, err %v; want allowed=%v", c.current, c.target, v, err, c.allowed)
			continue
		}
		if (v.Skipped != "") != c.skipped {
			t.Errorf("%q -> %q: skipped %q, want skipped=%v", c.current, c.target, v.Skipped, c.skipped)
		}
		if c.errHas != "" && !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("%q -> %q: error %q lacks %q", c.current, c.target, err, c.errHas)
		}
		if err != nil && !(strings.Contains(err.Error(), c.current) && strings.Contains(err.Error(), c.target)) {
			t.Errorf("%q -> %q: error %q does not name both versions", c.current, c.target, err)
		}
	}
}
