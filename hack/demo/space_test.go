package main

import (
	"errors"
	"strings"
	"testing"
)

func TestMinimalAvailableFor(t *testing.T) {
	const G = int64(1) << 30
	roomy := diskSpace{Node: "node-1", Disk: "d1", Available: 80 * G, Maximum: 100 * G}
	tight := diskSpace{Node: "node-2", Disk: "d2", Available: 21 * G, Maximum: 100 * G}
	cases := []struct {
		name   string
		disks  []diskSpace
		cur    int
		pct    int
		change bool
		err    error
	}{
		{"all pass", []diskSpace{roomy}, 25, 25, false, nil},
		// (21-1)/100 = 20% free after the replica: largest passing 19, minus margin 2.
		{"tight disk lowers", []diskSpace{roomy, tight}, 25, 17, true, nil},
		{"exactly at the limit fails Longhorn's strict check", []diskSpace{{Node: "n", Disk: "d", Available: 26 * G, Maximum: 100 * G}}, 25, 22, true, nil},
		{"full disk", []diskSpace{{Node: "n", Disk: "d", Available: G / 2, Maximum: 100 * G}}, 25, 25, false, errDiskFull},
		{"no disks", nil, 25, 25, false, errors.New("")},
	}
	for _, tc := range cases {
		pct, change, why, err := minimalAvailableFor(tc.disks, G, tc.cur)
		if tc.err != nil {
			if err == nil || (errors.Is(tc.err, errDiskFull) && !errors.Is(err, errDiskFull)) {
				t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || pct != tc.pct || change != tc.change || (change && why == "") {
			t.Errorf("%s: %d %v %q %v; want %d %v", tc.name, pct, change, why, err, tc.pct, tc.change)
		}
	}
}

func TestParseSumsAndPortal(t *testing.T) {
	h := "541e203c344b09dcce3abaf62b31b92a99acc64597d2d9a017c73467f95682c4"
	sums, rest := parseSums(h + "  small.bin\nFilesystem Size Used\n/dev/loop0 739M 34M\n")
	if sums["small.bin"] != h || len(sums) != 1 || len(rest) != 2 {
		t.Errorf("parseSums: %v %q", sums, rest)
	}
	if got := portalURL("iscsi://10.99.0.1:10089/iqn.2019-10.io.longhorn:v/1"); got != "iscsi://10.99.0.1:10089" {
		t.Errorf("portalURL = %q", got)
	}
}

func TestIsLeftover(t *testing.T) {
	for argv, want := range map[string]bool{
		"nbdfuse -P /tmp/longhorn-demo/nbdfuse.pid /tmp/longhorn-demo/fuse/disk nbd+unix:///v": true,
		"/usr/bin/dd if=/tmp/longhorn-demo/during-kill.src of=/tmp/longhorn-demo/mnt/x":        true,
		"dd if=/dev/zero of=/tmp/other":  false,
		"sh -c echo /tmp/longhorn-demo/": false,
	} {
		if got := isLeftover(strings.Fields(argv)); got != want {
			t.Errorf("isLeftover(%q) = %v, want %v", argv, got, want)
		}
	}
}
