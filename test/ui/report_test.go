package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// pwReport is the part of Playwright's JSON reporter output (report.json)
// that says which tests failed and why: suites nest, each spec holds its
// tests, each test its results (one per try).
type pwReport struct {
	Suites []pwSuite `json:"suites"`
	Errors []pwError `json:"errors"`
}

type pwSuite struct {
	Title  string    `json:"title"`
	Specs  []pwSpec  `json:"specs"`
	Suites []pwSuite `json:"suites"`
}

type pwSpec struct {
	Title string   `json:"title"`
	File  string   `json:"file"`
	Line  int      `json:"line"`
	Tests []pwTest `json:"tests"`
}

type pwTest struct {
	Results []pwResult `json:"results"`
}

type pwResult struct {
	Status string    `json:"status"`
	Errors []pwError `json:"errors"`
}

type pwError struct {
	Message string `json:"message"`
}

// ansi matches the terminal colour codes Playwright puts in messages.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// failureSummary returns, from a Playwright JSON report, one block per
// failed try: "<file>:<line> <title>: <status>" and the first maxLines
// lines of each error, colour codes removed. Empty when nothing failed.
func failureSummary(data []byte, maxLines int) (string, error) {
	var r pwReport
	if err := json.Unmarshal(data, &r); err != nil {
		return "", fmt.Errorf("playwright report: %w", err)
	}
	var b strings.Builder
	var walk func(s []pwSuite)
	walk = func(suites []pwSuite) {
		for _, s := range suites {
			for _, sp := range s.Specs {
				for _, t := range sp.Tests {
					for _, res := range t.Results {
						if res.Status == "passed" || res.Status == "skipped" {
							continue
						}
						fmt.Fprintf(&b, "%s:%d %s: %s\n", sp.File, sp.Line, sp.Title, res.Status)
						writeErrors(&b, res.Errors, maxLines)
					}
				}
			}
			walk(s.Suites)
		}
	}
	walk(r.Suites)
	if len(r.Errors) > 0 {
		b.WriteString("errors outside tests:\n")
		writeErrors(&b, r.Errors, maxLines)
	}
	return b.String(), nil
}

func writeErrors(b *strings.Builder, errs []pwError, maxLines int) {
	for _, e := range errs {
		lines := strings.Split(strings.TrimSpace(ansi.ReplaceAllString(e.Message, "")), "\n")
		if len(lines) > maxLines {
			lines = append(lines[:maxLines], "...")
		}
		for _, l := range lines {
			b.WriteString("    " + l + "\n")
		}
	}
}

// failures is what the browser suite's report says failed; run prints it
// after the cluster is down, as the last lines of the output.
var failures string

// noteFailures reads <artifacts>/report.json after a failed Playwright run.
func noteFailures(t *testing.T, artifacts string) {
	data, err := os.ReadFile(artifacts + "/report.json")
	if err != nil {
		t.Logf("no playwright report: %v", err)
		return
	}
	s, err := failureSummary(data, 12)
	if err != nil {
		t.Log(err)
		return
	}
	failures = s
	t.Logf("failed in the browser:\n%s", s)
}

func TestFailureSummary(t *testing.T) {
	report := `{"suites":[{"title":"volume.spec.ts","specs":[],"suites":[{"title":"x","specs":[
	 {"title":"a life","file":"volume.spec.ts","line":7,"tests":[{"results":[
	   {"status":"failed","errors":[{"message":"\u001b[31mError: expect(locator).toBeVisible() failed\u001b[39m\nline2\nline3"}]}]}]},
	 {"title":"fine","file":"pages.spec.ts","line":3,"tests":[{"results":[{"status":"passed","errors":[]}]}]}]}]}],
	 "errors":[]}`
	got, err := failureSummary([]byte(report), 2)
	if err != nil {
		t.Fatal(err)
	}
	want := "volume.spec.ts:7 a life: failed\n    Error: expect(locator).toBeVisible() failed\n    line2\n    ...\n"
	if got != want {
		t.Fatalf("summary:\n%q\nwant\n%q", got, want)
	}
	if got, _ := failureSummary([]byte(`{"suites":[],"errors":[]}`), 2); got != "" {
		t.Fatalf("nothing failed, summary %q", got)
	}
	if _, err := failureSummary([]byte(`{`), 2); err == nil {
		t.Fatal("a truncated report gave no error")
	}
}
