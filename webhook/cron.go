package webhook

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronField describes one field of a standard cron expression.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}},
	{name: "day of week", min: 0, max: 7, names: map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}},
}

var cronDescriptors = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true}

// ValidateCron checks a cron schedule as Kubernetes CronJobs accept it (the
// form Longhorn's RecurringJob uses): five fields (minute hour day-of-month
// month day-of-week), each "*", "?" (day fields), a value, a range "a-b", a
// step "*/n" or "a-b/n", or a comma-separated list of these; month and
// weekday names (JAN, MON) are allowed. A descriptor (@daily, @hourly, ...)
// or "@every <duration>" is accepted too. The error names the failing field.
func ValidateCron(expr string) error {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "@") {
		if cronDescriptors[expr] {
			return nil
		}
		if d, ok := strings.CutPrefix(expr, "@every "); ok {
			if dur, err := time.ParseDuration(strings.TrimSpace(d)); err == nil && dur > 0 {
				return nil
			}
		}
		return fmt.Errorf("unknown descriptor %q", expr)
	}
	parts := strings.Fields(expr)
	if len(parts) != len(cronFields) {
		return fmt.Errorf("%q has %d fields, want 5 (minute hour day-of-month month day-of-week)", expr, len(parts))
	}
	for i, p := range parts {
		if err := cronFields[i].check(p); err != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i].name, p, err)
		}
	}
	return nil
}

func (f cronField) check(s string) error {
	for _, item := range strings.Split(s, ",") {
		if err := f.checkItem(item); err != nil {
			return err
		}
	}
	return nil
}

func (f cronField) checkItem(item string) error {
	rng, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || n < 1 || n > f.max+1 {
			return fmt.Errorf("step %q must be 1-%d", step, f.max+1)
		}
	}
	if rng == "*" || (rng == "?" && (f.name == "day of month" || f.name == "day of week")) {
		return nil
	}
	lo, hi, isRange := strings.Cut(rng, "-")
	a, err := f.value(lo)
	if err != nil {
		return err
	}
	if !isRange {
		return nil
	}
	b, err := f.value(hi)
	if err != nil {
		return err
	}
	if a > b {
		return fmt.Errorf("range %d-%d runs backwards", a, b)
	}
	return nil
}

func (f cronField) value(s string) (int, error) {
	if v, ok := f.names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("%q is not a number in %d-%d", s, f.min, f.max)
	}
	return n, nil
}
