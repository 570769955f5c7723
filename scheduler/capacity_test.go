package scheduler

import (
	"slices"
	"strings"
	"testing"
)

const gib = int64(1) << 30

func TestIsSchedulableToDiskOverProvisioning(t *testing.T) {
	// A 100 GiB disk, nothing reserved, nearly empty: only the provisioned
	// condition matters. The limit is (max - reserved) * pct / 100 and a
	// request exactly at the limit fits.
	base := DiskCapacity{StorageMaximum: 100 * gib, StorageAvailable: 100 * gib, MinimalAvailablePercentage: 25}
	cases := []struct {
		name      string
		pct       int64
		reserved  int64
		scheduled int64
		size      int64
		want      bool
	}{
		{"100% exactly at limit", 100, 0, 0, 100 * gib, true},
		{"100% one byte over", 100, 0, 0, 100*gib + 1, false},
		{"100% with scheduled", 100, 0, 60 * gib, 40 * gib, true},
		{"100% with scheduled over", 100, 0, 60 * gib, 40*gib + 1, false},
		{"150% exactly at limit", 150, 0, 0, 150 * gib, true},
		{"150% one byte over", 150, 0, 0, 150*gib + 1, false},
		{"150% scheduled 100 plus 50", 150, 0, 100 * gib, 50 * gib, true},
		{"200% exactly at limit", 200, 0, 0, 200 * gib, true},
		{"200% one byte over", 200, 0, 0, 200*gib + 1, false},
		{"200% with 30 GiB reserved at limit", 200, 30 * gib, 0, 140 * gib, true},
		{"200% with 30 GiB reserved over", 200, 30 * gib, 0, 140*gib + 1, false},
		{"0% refuses any size", 0, 0, 0, 1, false},
		{"0% accepts size 0", 0, 0, 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.OverProvisioningPercentage = tc.pct
			c.StorageReserved = tc.reserved
			c.StorageScheduled = tc.scheduled
			got, why := IsSchedulableToDisk(tc.size, 0, c)
			if got != tc.want {
				t.Fatalf("IsSchedulableToDisk(size=%d) = %v (%s), want %v", tc.size, got, why, tc.want)
			}
			if !got && why == "" {
				t.Fatal("rejection without an explanation")
			}
		})
	}
}

func TestIsSchedulableToDiskMinimalAvailable(t *testing.T) {
	// 100 GiB disk, minimal available 25 % = 25 GiB. The actual-space
	// condition is strict: available - required must be above the line.
	cases := []struct {
		name      string
		available int64
		required  int64
		pct       int64
		want      bool
	}{
		{"exactly at the line", 25 * gib, 0, 25, false},
		{"one byte above the line", 25*gib + 1, 0, 25, true},
		{"required pushes onto the line", 50 * gib, 25 * gib, 25, false},
		{"required leaves one byte", 50 * gib, 25*gib - 1, 25, true},
		{"0% needs only one free byte", 1, 0, 0, true},
		{"100% can never fit", 100 * gib, 0, 100, false},
		{"available zero", 0, 0, 0, false},
		{"available negative", -1, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DiskCapacity{StorageMaximum: 100 * gib, StorageAvailable: tc.available,
				OverProvisioningPercentage: 100, MinimalAvailablePercentage: tc.pct}
			if got, why := IsSchedulableToDisk(1, tc.required, c); got != tc.want {
				t.Fatalf("got %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestIsSchedulableToDiskMaximumZero(t *testing.T) {
	c := DiskCapacity{StorageMaximum: 0, StorageAvailable: 10, OverProvisioningPercentage: 100}
	if ok, why := IsSchedulableToDisk(0, 0, c); ok || why == "" {
		t.Fatalf("StorageMaximum 0 must be refused with a reason, got %v %q", ok, why)
	}
}

func TestIsDiskNotFullAndUnderPressure(t *testing.T) {
	c := DiskCapacity{StorageMaximum: 100, StorageAvailable: 25, MinimalAvailablePercentage: 25}
	if IsDiskNotFull(c) {
		t.Error("a disk at the minimal-available line is full")
	}
	c.StorageAvailable = 26
	if !IsDiskNotFull(c) {
		t.Error("a disk above the line is not full")
	}
	// unused = (available - reserved) * 100 / max; pressure when < 100 - pct.
	p := DiskCapacity{StorageMaximum: 100, StorageAvailable: 10}
	if IsDiskUnderPressure(90, p) {
		t.Error("10% unused with threshold 90 is exactly at the line, not under pressure")
	}
	p.StorageAvailable = 9
	if !IsDiskUnderPressure(90, p) {
		t.Error("9% unused with threshold 90 is under pressure")
	}
	p.StorageReserved = 20
	p.StorageAvailable = 15
	if !IsDiskUnderPressure(90, p) {
		t.Error("reserved beyond available means 0% unused")
	}
}

func TestIsSelectorsInTags(t *testing.T) {
	cases := []struct {
		name       string
		tags, sels []string
		allowEmpty bool
		want       bool
	}{
		{"no selector no tags", nil, nil, false, true},
		{"no selector tagged allowed", []string{"ssd"}, nil, true, true},
		{"no selector tagged refused", []string{"ssd"}, nil, false, false},
		{"selector present", []string{"fast", "ssd"}, []string{"ssd"}, false, true},
		{"all selectors present unsorted tags", []string{"ssd", "fast"}, []string{"fast", "ssd"}, true, true},
		{"one selector missing", []string{"ssd"}, []string{"ssd", "nvme"}, true, false},
		{"selector on untagged", nil, []string{"ssd"}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSelectorsInTags(tc.tags, tc.sels, tc.allowEmpty); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsSupportedVolumeSize(t *testing.T) {
	if !IsSupportedVolumeSize(DataEngineV1, "ext4", MaxExt4VolumeSize) {
		t.Error("16 TiB fits ext4")
	}
	if IsSupportedVolumeSize(DataEngineV1, "ext4", MaxExt4VolumeSize+1) {
		t.Error("16 TiB + 1 does not fit ext4")
	}
	if !IsSupportedVolumeSize(DataEngineV1, "xfs", MaxExt4VolumeSize+1) {
		t.Error("xfs has no 16 TiB limit")
	}
	if !IsSupportedVolumeSize(DataEngineV2, "ext4", MaxExt4VolumeSize+1) {
		t.Error("v2 block disks have no file size limit")
	}
}

func TestResolveSoftAntiAffinity(t *testing.T) {
	for _, tc := range []struct {
		global   bool
		override string
		want     bool
	}{
		{true, "", true}, {true, "ignored", true}, {false, "ignored", false},
		{false, "enabled", true}, {true, "disabled", false},
	} {
		if got := ResolveSoftAntiAffinity(tc.global, tc.override); got != tc.want {
			t.Errorf("ResolveSoftAntiAffinity(%v, %q) = %v, want %v", tc.global, tc.override, got, tc.want)
		}
	}
}

func TestBalanceScore(t *testing.T) {
	if s := BalanceScore(map[string]int64{"a": 10, "b": 10}); s != 0 {
		t.Errorf("even = %v, want 0", s)
	}
	if s := BalanceScore(map[string]int64{"a": 30, "b": 10}); s != 1 {
		t.Errorf("(30-10)/20 = %v, want 1", s)
	}
	if s := BalanceScore(map[string]int64{"a": 0, "b": 0}); s < 1e300 {
		t.Errorf("all full must score worst, got %v", s)
	}
	if s := BalanceScore(nil); s < 1e300 {
		t.Errorf("empty must score worst, got %v", s)
	}
}

// TestScheduleCapacityBoundaries runs the capacity boundaries through
// Schedule (not only the formula): a 10 GiB replica on one 100 GiB disk that
// already has `scheduled` GiB provisioned, at each over-provisioning
// percentage, and a disk whose free space sits exactly at, or one byte
// above, the minimal-available line. A refusal says why, with the numbers.
func TestScheduleCapacityBoundaries(t *testing.T) {
	cases := []struct {
		name      string
		overPct   int64
		scheduled int64 // GiB already provisioned on the disk
		available int64 // bytes free
		ok        bool
		detail    string
	}{
		{"100%: fills the disk exactly", 100, 90, 100 * gib, true, ""},
		{"100%: one GiB too much", 100, 91, 100 * gib, false, "exceeds the limit"},
		{"150%: fills 150 GiB exactly", 150, 140, 100 * gib, true, ""},
		{"150%: one GiB too much", 150, 141, 100 * gib, false, "(150% of maximum"},
		{"200%: fills 200 GiB exactly", 200, 190, 100 * gib, true, ""},
		{"200%: one GiB too much", 200, 191, 100 * gib, false, "(200% of maximum"},
		{"free space exactly at the 25% line", 100, 0, 25 * gib, false, "not above the minimal available"},
		{"free space one byte above the line", 100, 0, 25*gib + 1, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := disk("d1", 100)
			d.StorageScheduled, d.StorageAvailable = tc.scheduled*gib, tc.available
			s := defaultSettings()
			s.OverProvisioningPercentage = tc.overPct
			v := vol()
			got, ok, rs := Schedule(Input{Volume: v, Nodes: []Node{node("n1", "", d)}, Settings: s, Now: now,
				Replica: Replica{Name: "new", VolumeSize: v.Size, Active: true}})
			if ok != tc.ok {
				t.Fatalf("scheduled=%v (%+v), want %v; reasons %v", ok, got, tc.ok, rs)
			}
			if !ok && (!slices.Contains(rs.Codes(), ReasonInsufficientStorage) || !strings.Contains(rs.Message(), tc.detail)) {
				t.Fatalf("message %q lacks %s / %q", rs.Message(), ReasonInsufficientStorage, tc.detail)
			}
		})
	}
}
