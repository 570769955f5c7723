package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestSetupLogging(t *testing.T) {
	cases := []struct {
		level, format string
		wantErr       string
	}{
		{"info", "text", ""},
		{"debug", "json", ""},
		{"loud", "text", "--log-level"},
		{"info", "xml", "--log-format"},
	}
	for _, c := range cases {
		err := setupLogging(c.level, c.format)
		if c.wantErr == "" && err != nil {
			t.Errorf("%s/%s: unexpected error %v", c.level, c.format, err)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s/%s: error %v, want one naming %s", c.level, c.format, err, c.wantErr)
		}
	}
	t.Cleanup(func() { _ = setupLogging("info", "text") })
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	a := New()
	a.Writer = &out
	if err := a.Run([]string{"longhorn", "--version"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "commit") || !strings.Contains(out.String(), "built") {
		t.Fatalf("--version printed %q, want version, commit and build date", out.String())
	}
	if logrus.GetLevel() != logrus.InfoLevel {
		t.Fatalf("default log level %v", logrus.GetLevel())
	}
}
