package engineapi

import (
	"errors"
	"testing"
)

func TestCheckCompatibility(t *testing.T) {
	const c = CurrentInstanceManagerAPIVersion
	cases := []struct {
		name                     string
		imMin, imCur, pMin, pCur int64
		ok                       bool
	}{
		{"same", 1, c, 1, CurrentProxyAPIVersion, true},
		{"server newer but still serves us", 1, c + 3, 1, CurrentProxyAPIVersion, true},
		{"server too new", c + 1, c + 2, 1, CurrentProxyAPIVersion, false},
		{"server too old", 0, MinInstanceManagerAPIVersion - 1, 1, CurrentProxyAPIVersion, false},
		{"zero versions (not reported)", 0, 0, 0, 0, false},
		{"inverted range", c, c - 1, 1, 1, false},
		{"proxy too new", 1, c, CurrentProxyAPIVersion + 1, CurrentProxyAPIVersion + 1, false},
	}
	for _, tc := range cases {
		err := CheckCompatibility(APIVersions{InstanceManagerMin: tc.imMin, InstanceManagerCurrent: tc.imCur, ProxyMin: tc.pMin, ProxyCurrent: tc.pCur})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrIncompatible)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
