package controller

import "testing"

func TestIsResponsibleFor(t *testing.T) {
	down := map[string]bool{"dead": true}
	isDown := func(n string) bool { return down[n] }
	cases := []struct {
		name                 string
		me, preferred, owner string
		want                 bool
	}{
		{"preferred node is me", "n1", "n1", "n2", true},
		{"preferred is someone else, alive", "n1", "n2", "n1", false},
		{"I own it and preferred is unset", "n1", "", "n1", true},
		{"I own it and preferred is down", "n1", "dead", "n1", true},
		{"someone else owns it, preferred unset", "n1", "", "n2", false},
		{"owner down, preferred unset: anyone may take it", "n1", "", "dead", true},
		{"owner and preferred down: anyone may take it", "n1", "dead", "dead", true},
		{"no owner yet, no preference", "n1", "", "", true},
		{"owner down but preferred alive elsewhere", "n1", "n2", "dead", false},
	}
	for _, tc := range cases {
		if got := isResponsibleFor(tc.me, tc.preferred, tc.owner, isDown); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
