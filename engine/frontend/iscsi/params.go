package iscsi

import (
	"strconv"
	"strings"
)

// params are the operational parameters of a connection and its session
// (RFC 7143 13). Lengths are in bytes, times in seconds.
type params struct {
	headerDigest      bool
	dataDigest        bool
	maxRecvDSL        int // ours: the most data per PDU we accept
	maxXmitDSL        int // the initiator's MaxRecvDataSegmentLength
	maxBurst          int
	firstBurst        int
	immediateData     bool
	initialR2T        bool
	maxOutstandingR2T int
	time2Wait         int
	time2Retain       int
}

// limits are what this target offers in negotiation.
type limits struct {
	maxRecvDSL        int
	maxBurst          int
	firstBurst        int
	maxOutstandingR2T int
	time2Wait         int
	time2Retain       int
	// preferCRC32C picks CRC32C digests whenever the initiator offers them
	// (otherwise the initiator's first choice wins).
	preferCRC32C bool
}

var defaultLimits = limits{
	maxRecvDSL:        262144,
	maxBurst:          16776192,
	firstBurst:        262144,
	maxOutstandingR2T: 16,
	time2Wait:         2,
	time2Retain:       0,
}

// rfcDefaults are the values in force before negotiation (RFC 7143 13).
func rfcDefaults() params {
	return params{
		maxRecvDSL: 8192, maxXmitDSL: 8192, maxBurst: 262144, firstBurst: 65536,
		immediateData: true, initialR2T: true, maxOutstandingR2T: 1, time2Wait: 2, time2Retain: 20,
	}
}

const (
	valNotUnderstood = "NotUnderstood"
	valReject        = "Reject"
	valIrrelevant    = "Irrelevant"
)

// parseNumber accepts decimal and 0x-prefixed hexadecimal (RFC 7143 6.1).
func parseNumber(v string) (uint64, bool) {
	if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X") {
		n, err := strconv.ParseUint(v[2:], 16, 64)
		return n, err == nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func parseBool(v string) (bool, bool) {
	switch v {
	case "Yes":
		return true, true
	case "No":
		return false, true
	}
	return false, false
}

// negotiateDigest picks from an offered list such as "CRC32C,None".
func negotiateDigest(offer string, preferCRC bool) (bool, string) {
	var haveNone, haveCRC bool
	first := ""
	for _, v := range strings.Split(offer, ",") {
		switch v {
		case "None":
			haveNone = true
		case "CRC32C":
			haveCRC = true
		default:
			continue
		}
		if first == "" {
			first = v
		}
	}
	switch {
	case preferCRC && haveCRC:
		return true, "CRC32C"
	case first == "None" || (first == "" && haveNone):
		return false, "None"
	case haveCRC:
		return true, "CRC32C"
	}
	return false, valReject
}

// numeric negotiates a numeric key with range [lo, hi]: the result is
// pick(offer, ours). ok is false when the offer is malformed or out of range.
func numeric(v string, lo, hi uint64) (int, bool) {
	n, ok := parseNumber(v)
	if !ok || n < lo || n > hi {
		return 0, false
	}
	return int(n), true
}

// numericKey is a numeric operational key: its range and how the result
// is derived from the offer (RFC 7143 13: min or max with ours).
type numericKey struct {
	lo, hi uint64
	apply  func(p *params, lim *limits, n int) string
}

var numericKeys = map[string]numericKey{
	"MaxConnections": {1, 65535, func(*params, *limits, int) string { return "1" }},
	"MaxBurstLength": {512, 1<<24 - 1, func(p *params, lim *limits, n int) string {
		p.maxBurst = min(n, lim.maxBurst)
		return strconv.Itoa(p.maxBurst)
	}},
	"FirstBurstLength": {512, 1<<24 - 1, func(p *params, lim *limits, n int) string {
		p.firstBurst = min(n, lim.firstBurst)
		return strconv.Itoa(p.firstBurst)
	}},
	"MaxOutstandingR2T": {1, 65535, func(p *params, lim *limits, n int) string {
		p.maxOutstandingR2T = min(n, lim.maxOutstandingR2T)
		return strconv.Itoa(p.maxOutstandingR2T)
	}},
	"DefaultTime2Wait": {0, 3600, func(p *params, lim *limits, n int) string {
		p.time2Wait = max(n, lim.time2Wait)
		return strconv.Itoa(p.time2Wait)
	}},
	"DefaultTime2Retain": {0, 3600, func(p *params, lim *limits, n int) string {
		p.time2Retain = min(n, lim.time2Retain)
		return strconv.Itoa(p.time2Retain)
	}},
	"ErrorRecoveryLevel": {0, 2, func(*params, *limits, int) string { return "0" }},
	"iSCSIProtocolLevel": {0, 31, func(*params, *limits, int) string { return "1" }}, // RFC 7144: min(offer, 1)
}

// negotiateOp answers one operational key (RFC 7143 13.2-13.24) and
// updates p. It returns the response value and whether to send it.
func negotiateOp(p *params, lim *limits, key, v string) (string, bool) {
	if k, ok := numericKeys[key]; ok {
		n, ok := numeric(v, k.lo, k.hi)
		if !ok {
			return valReject, true
		}
		return k.apply(p, lim, n), true
	}
	switch key {
	case "HeaderDigest":
		on, r := negotiateDigest(v, lim.preferCRC32C)
		p.headerDigest = on
		return r, true
	case "DataDigest":
		on, r := negotiateDigest(v, lim.preferCRC32C)
		p.dataDigest = on
		return r, true
	case "MaxRecvDataSegmentLength":
		n, ok := numeric(v, 512, 1<<24-1)
		if !ok {
			return valReject, true
		}
		p.maxXmitDSL = n
		return "", false // declarative: ours is declared separately
	case "InitialR2T", "ImmediateData", "DataPDUInOrder", "DataSequenceInOrder", "IFMarker", "OFMarker", "RDMAExtensions":
		return negotiateBool(p, key, v), true
	case "IFMarkInt", "OFMarkInt":
		return valIrrelevant, true
	case "TaskReporting":
		return "RFC3720", true
	case "InitiatorAlias", "TargetAlias", "InitiatorName", "TargetName", "SessionType", "TargetPortalGroupTag", "TargetAddress":
		return "", false // declarative, handled by the login
	}
	return valNotUnderstood, true
}

// negotiateBool answers the boolean keys: InitialR2T is OR with our "No",
// ImmediateData AND with our "Yes", the in-order keys OR with our "Yes",
// markers and RDMA AND with our "No".
func negotiateBool(p *params, key, v string) string {
	b, ok := parseBool(v)
	if !ok {
		return valReject
	}
	switch key {
	case "InitialR2T":
		p.initialR2T = b
		return yesNo(b)
	case "ImmediateData":
		p.immediateData = b
		return yesNo(b)
	case "DataPDUInOrder", "DataSequenceInOrder":
		return "Yes"
	}
	return "No"
}

// validateParams fixes combinations RFC 7143 forbids: FirstBurstLength may
// not exceed MaxBurstLength.
func (p *params) validate() {
	if p.firstBurst > p.maxBurst {
		p.firstBurst = p.maxBurst
	}
}
