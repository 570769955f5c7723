package enginerpc

import (
	"fmt"
	"strconv"
)

// Longhorn's ReplicaService carries byte counts as decimal strings
// (Replica.size, DiskInfo.size, ReplicaCreateRequest.size); these read and
// write them. Not generated: kept next to the generated code it serves.

// ParseSize reads a decimal byte count; "" is 0. field names the field in
// the error.
func ParseSize(field, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a decimal byte count", field, s)
	}
	return n, nil
}

// FormatSize writes a byte count as Longhorn's ReplicaService does.
func FormatSize(n int64) string { return strconv.FormatInt(n, 10) }

// SizeBytes is r's volume size in bytes; a malformed size reads as 0.
func (r *Replica) SizeBytes() int64 {
	n, _ := ParseSize("size", r.GetSize())
	return n
}

// SizeBytes is d's allocated bytes; a malformed size reads as 0.
func (d *DiskInfo) SizeBytes() int64 {
	n, _ := ParseSize("size", d.GetSize())
	return n
}
