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

// negotiateOp answers one operational key (RFC 7143 13.2-13.24) and
// updates p. It returns the response value and whether to send it.
func negotiateOp(p *params, lim *limits, key, v string) (string, bool) {
	switch key {
	case "HeaderDigest":
		on, r := negotiateDigest(v, lim.preferCRC32C)
		p.headerDigest = on
		return r, true
	case "DataDigest":
		on, r := negotiateDigest(v, lim.preferCRC32C)
		p.dataDigest = on
		return r, true
	case "MaxConnections":
		if _, ok := numeric(v, 1, 65535); !ok {
			return valReject, true
		}
		return "1", true
	case "InitialR2T":
		b, ok := parseBool(v)
		if !ok {
			return valReject, true
		}
		p.initialR2T = b // OR with our "No"
		return yesNo(b), true
	case "ImmediateData":
		b, ok := parseBool(v)
		if !ok {
			return valReject, true
		}
		p.immediateData = b // AND with our "Yes"
		return yesNo(b), true
	case "MaxRecvDataSegmentLength":
		n, ok := numeric(v, 512, 1<<24-1)
		if !ok {
			return valReject, true
		}
		p.maxXmitDSL = n
		return "", false // declarative: ours is declared separately
	case "MaxBurstLength":
		n, ok := numeric(v, 512, 1<<24-1)
		if !ok {
			return valReject, true
		}
		p.maxBurst = min(n, lim.maxBurst)
		return strconv.Itoa(p.maxBurst), true
	case "FirstBurstLength":
		n, ok := numeric(v, 512, 1<<24-1)
		if !ok {
			return valReject, true
		}
		p.firstBurst = min(n, lim.firstBurst)
		return strconv.Itoa(p.firstBurst), true
	case "MaxOutstandingR2T":
		n, ok := numeric(v, 1, 65535)
		if !ok {
			return valReject, true
		}
		p.maxOutstandingR2T = min(n, lim.maxOutstandingR2T)
		return strconv.Itoa(p.maxOutstandingR2T), true
	case "DefaultTime2Wait":
		n, ok := numeric(v, 0, 3600)
		if !ok {
			return valReject, true
		}
		p.time2Wait = max(n, lim.time2Wait)
		return strconv.Itoa(p.time2Wait), true
	case "DefaultTime2Retain":
		n, ok := numeric(v, 0, 3600)
		if !ok {
			return valReject, true
		}
		p.time2Retain = min(n, lim.time2Retain)
		return strconv.Itoa(p.time2Retain), true
	case "ErrorRecoveryLevel":
		if _, ok := numeric(v, 0, 2); !ok {
			return valReject, true
		}
		return "0", true
	case "DataPDUInOrder", "DataSequenceInOrder":
		if _, ok := parseBool(v); !ok {
			return valReject, true
		}
		return "Yes", true // OR with our "Yes"
	case "IFMarker", "OFMarker", "RDMAExtensions":
		if _, ok := parseBool(v); !ok {
			return valReject, true
		}
		return "No", true // AND with our "No"
	case "IFMarkInt", "OFMarkInt":
		return valIrrelevant, true
	case "iSCSIProtocolLevel":
		if _, ok := numeric(v, 0, 31); !ok {
			return valReject, true
		}
		return "1", true // RFC 7144: min(offer, 1)
	case "TaskReporting":
		return "RFC3720", true
	case "InitiatorAlias", "TargetAlias", "InitiatorName", "TargetName", "SessionType", "TargetPortalGroupTag", "TargetAddress":
		return "", false // declarative, handled by the login
	}
	return valNotUnderstood, true
}

// validateParams fixes combinations RFC 7143 forbids: FirstBurstLength may
// not exceed MaxBurstLength.
func (p *params) validate() {
	if p.firstBurst > p.maxBurst {
		p.firstBurst = p.maxBurst
	}
}
