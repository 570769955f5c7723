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
		{"info", "plain", ""}, // Longhorn's chart default
		{"info", "JSON", ""},
		{"info", "", ""},
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
	if err := setupLogging("info", "plain"); err != nil {
		t.Fatal(err)
	}
	if _, ok := logrus.StandardLogger().Formatter.(*logrus.TextFormatter); !ok {
		t.Errorf("plain gives %T, want the text formatter", logrus.StandardLogger().Formatter)
	}
	if err := setupLogging("info", "json"); err != nil {
		t.Fatal(err)
	}
	if _, ok := logrus.StandardLogger().Formatter.(*logrus.JSONFormatter); !ok {
		t.Errorf("json gives %T", logrus.StandardLogger().Formatter)
	}
}

// The manager exits on a bad LOG_FORMAT; Longhorn's chart default is plain.
func TestLogFormatFromEnv(t *testing.T) {
	for format, ok := range map[string]bool{"plain": true, "json": true, "text": true, "xml": false} {
		t.Setenv("LOG_FORMAT", format)
		var out bytes.Buffer
		a := New()
		a.Writer, a.ErrWriter = &out, &out
		err := a.Run([]string{"longhorn"})
		if ok != (err == nil) {
			t.Errorf("LOG_FORMAT=%s: %v", format, err)
		}
	}
	_ = setupLogging("info", "text")
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
