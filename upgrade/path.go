// Package upgrade holds the checks and migrations run between product versions:
// the upgrade-path rule of `longhorn pre-upgrade` now, the per-version migrations of
// `longhorn post-upgrade` as they are needed.
package upgrade

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Verdict is the outcome of CheckPath: Allowed, or Skipped with the reason when a
// version is not a release version (a development build), so no rule applies.
type Verdict struct {
	Allowed bool
	Skipped string
}

// CheckPath applies Longhorn's upgrade path enforcement (Longhorn docs, "Upgrade
// Path Enforcement and Downgrade Prevention", since v1.5.0) to an upgrade from
// current to target, both semantic versions with a leading "v" ("v1.7.2",
// "v1.8.0-rc1"):
//
//   - current empty (a fresh install): allowed;
//   - x.y.* -> x.y.(*+n) and x.y.* -> x.(y+1).*: allowed;
//   - x.y.* -> (x+1).0.*: allowed (Longhorn allows a major step only from the last
//     minor of the previous major; the product cannot know which minor is the last,
//     so it allows the step to the new major's first minor);
//   - a downgrade (target older than current), skipping a minor (x.(y-1).* ->
//     x.(y+1).*) or a major: refused with an error naming both versions.
//
// A version that is not valid semver (a build from an untagged commit such as
// "9161769-dirty") is not checked: the Verdict says so in Skipped.
func CheckPath(current, target string) (Verdict, error) {
	if current == "" {
		return Verdict{Allowed: true, Skipped: "no current version recorded (a fresh install)"}, nil
	}
	for _, v := range []string{current, target} {
		if !semver.IsValid(v) {
			return Verdict{Allowed: true, Skipped: fmt.Sprintf("version %q is not a release version (vMAJOR.MINOR.PATCH); the upgrade path is not checked", v)}, nil
		}
	}
	if semver.Compare(target, current) < 0 {
		return Verdict{}, fmt.Errorf("upgrade from %s to %s: downgrading is not supported", current, target)
	}
	cMaj, cMin := majorMinor(current)
	tMaj, tMin := majorMinor(target)
	switch {
	case tMaj == cMaj && tMin-cMin > 1:
		return Verdict{}, fmt.Errorf("upgrade from %s to %s: upgrading by more than one minor version is not supported; upgrade to v%d.%d first", current, target, cMaj, cMin+1)
	case tMaj == cMaj+1 && tMin != 0:
		return Verdict{}, fmt.Errorf("upgrade from %s to %s: a new major version is reached only through its first minor (v%d.0.x)", current, target, tMaj)
	case tMaj > cMaj+1:
		return Verdict{}, fmt.Errorf("upgrade from %s to %s: upgrading by more than one major version is not supported", current, target)
	}
	return Verdict{Allowed: true}, nil
}

// majorMinor returns the numeric major and minor of a valid semver string.
func majorMinor(v string) (int, int) {
	mm := strings.TrimPrefix(semver.MajorMinor(v), "v")
	maj, mnr, _ := strings.Cut(mm, ".")
	a, _ := strconv.Atoi(maj)
	b, _ := strconv.Atoi(mnr)
	return a, b
}
