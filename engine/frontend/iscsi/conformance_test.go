package iscsi

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// Conformance: libiscsi's iscsi-test-cu families SCSI and iSCSI against
// our target and, in the same run, against Debian's tgtd on a file. We must
// pass at least as many tests as tgtd, and every failure must be listed
// with a reason in testdata/libiscsi-known-failures.txt.

const knownFailuresFile = "testdata/libiscsi-known-failures.txt"

type outcome int

const (
	passed outcome = iota
	failed
	skipped // reported as passed by CUnit, but the test printed [SKIPPED]
)

// cuResult is the per-test outcome of one iscsi-test-cu run.
type cuResult struct {
	tests                map[string]outcome // "Suite.Test"
	ran, passes, failing int                // from the Run Summary
}

func (r *cuResult) count(o outcome) int {
	n := 0
	for _, x := range r.tests {
		if x == o {
			n++
		}
	}
	return n
}

func (r *cuResult) failures() []string {
	var out []string
	for name, o := range r.tests {
		if o == failed {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

var (
	reSuite   = regexp.MustCompile(`^Suite: (\S+)`)
	reTest    = regexp.MustCompile(`^\s+Test: (\S+) \.\.\.(.*)$`)
	reSummary = regexp.MustCompile(`^\s+tests\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)`)
)

// parseTestCU reads the CUnit verbose output of iscsi-test-cu: "Suite: S",
// "  Test: T ...passed|FAILED", where messages printed by the test may come
// between "..." and the result, which then opens a line of its own.
func parseTestCU(out string) (*cuResult, error) {
	r := &cuResult{tests: map[string]outcome{}}
	suite, cur := "", ""
	skip := false
	finish := func(res string) {
		if cur == "" {
			return
		}
		o := passed
		switch {
		case res == "FAILED":
			o = failed
		case skip:
			o = skipped
		}
		r.tests[suite+"."+cur] = o
		cur, skip = "", false
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	summary := false
	for sc.Scan() {
		line := sc.Text()
		if m := reSuite.FindStringSubmatch(line); m != nil {
			suite = m[1]
			continue
		}
		if m := reTest.FindStringSubmatch(line); m != nil {
			cur, skip = m[1], false
			line = m[2]
		}
		if cur != "" {
			if strings.Contains(line, "[SKIPPED]") {
				skip = true
			}
			// the result word opens the rest of the Test line or a line of
			// its own; output of the next test may follow it on that line
			switch t := strings.TrimSpace(line); {
			case strings.HasPrefix(t, "passed"):
				finish("passed")
			case strings.HasPrefix(t, "FAILED"):
				finish("FAILED")
			}
		}
		if m := reSummary.FindStringSubmatch(line); m != nil {
			r.ran, _ = strconv.Atoi(m[2])
			r.passes, _ = strconv.Atoi(m[3])
			r.failing, _ = strconv.Atoi(m[4])
			summary = true
		}
	}
	if !summary {
		return r, fmt.Errorf("no Run Summary in iscsi-test-cu output")
	}
	if got := len(r.tests); got != r.ran || r.count(failed) != r.failing {
		return r, fmt.Errorf("parsed %d tests (%d failed), summary says %d ran, %d failed", got, r.count(failed), r.ran, r.failing)
	}
	return r, nil
}

// loadKnownFailures reads "Family.Suite.Test  reason" lines.
func loadKnownFailures(t testing.TB) map[string]string {
	t.Helper()
	data, err := os.ReadFile(knownFailuresFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, " ")
		if !ok || strings.TrimSpace(reason) == "" {
			t.Fatalf("%s:%d: want \"Family.Suite.Test reason\", got %q", knownFailuresFile, i+1, line)
		}
		out[name] = strings.TrimSpace(reason)
	}
	return out
}

func runTestCU(t *testing.T, family string, urls ...string) (*cuResult, string) {
	args := append([]string{"-d", "-v", "--test=" + family}, urls...)
	// iscsi-test-cu exits 1 when a test failed; the summary tells.
	out, runErr := runTool(t, 8*time.Minute, "iscsi-test-cu", args...)
	r, err := parseTestCU(out)
	if err != nil {
		t.Errorf("iscsi-test-cu %s: %v (exit: %v)\n%s", family, err, runErr, tail(out, 4000))
		return nil, out
	}
	return r, out
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestLibiscsiConformance(t *testing.T) {
	testutil.RequireTool(t, "iscsi-test-cu")
	known := loadKnownFailures(t)
	const size = 1 << 30
	ours := startTarget(t, size, Config{}, nil)
	base := startTgtd(t, size)
	for _, fam := range []struct {
		name      string
		multipath bool
	}{{"SCSI", true}, {"iSCSI", false}} {
		var mine, theirs *cuResult
		var mineOut string
		var wg sync.WaitGroup
		run := func(dst **cuResult, out *string, url string) {
			defer wg.Done()
			urls := []string{url}
			if fam.multipath {
				urls = append(urls, url) // 2nd path enables MultipathIO
			}
			r, o := runTestCU(t, fam.name, urls...) // t.Errorf only: safe off the test goroutine
			*dst = r
			if out != nil {
				*out = o
			}
		}
		wg.Add(2)
		go run(&mine, &mineOut, ours.url())
		go run(&theirs, nil, base.url())
		wg.Wait()
		if mine == nil || theirs == nil {
			t.FailNow()
		}
		t.Logf("%s: ours %d passed (%d skipped), %d failed; tgtd %d passed (%d skipped), %d failed of %d",
			fam.name, mine.passes, mine.count(skipped), mine.failing, theirs.passes, theirs.count(skipped), theirs.failing, theirs.ran)
		t.Logf("%s: tgtd failures: %v", fam.name, theirs.failures())
		if mine.passes < theirs.passes {
			t.Errorf("%s: %d passes, fewer than tgtd's %d", fam.name, mine.passes, theirs.passes)
		}
		for _, name := range mine.failures() {
			full := fam.name + "." + name
			if reason, ok := known[full]; ok {
				t.Logf("known failure %s: %s", full, reason)
				continue
			}
			t.Errorf("unlisted failure %s", full)
		}
		if t.Failed() {
			t.Logf("iscsi-test-cu %s output (tail):\n%s", fam.name, tail(mineOut, 20000))
		}
	}
}

// TestParseTestCU checks the parser on a recorded run of the SCSI family
// (testdata/iscsi-test-cu-scsi-sample.txt, against this target).
func TestParseTestCU(t *testing.T) {
	data, err := os.ReadFile("testdata/iscsi-test-cu-scsi-sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseTestCU(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if r.ran != 215 || len(r.tests) != 215 {
		t.Fatalf("ran %d, parsed %d, want 215", r.ran, len(r.tests))
	}
	if got := r.failures(); len(got) != 1 || got[0] != "GetLBAStatus.UnmapSingle" {
		t.Errorf("failures %v", got)
	}
	if r.tests["ExtendedCopy.Simple"] != skipped || r.tests["Read10.Simple"] != passed || r.tests["ModeSense6.Residuals"] != passed {
		t.Errorf("outcomes: %v %v %v", r.tests["ExtendedCopy.Simple"], r.tests["Read10.Simple"], r.tests["ModeSense6.Residuals"])
	}
	if _, err := parseTestCU("no summary"); err == nil {
		t.Error("want an error without a Run Summary")
	}
}
