package iscsi

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Login (RFC 7143 6.3, 11.12, 11.13): stages SecurityNegotiation (0),
// LoginOperationalNegotiation (1), FullFeaturePhase (3).

const (
	stageSecurity    = 0
	stageOperational = 1
	stageFullFeature = 3
)

// Login status class and detail (RFC 7143 11.13.5), as class<<8|detail.
const (
	loginSuccess          = 0x0000
	loginInitiatorError   = 0x0200
	loginAuthFailed       = 0x0201
	loginNotFound         = 0x0203
	loginUnsupportedVer   = 0x0205
	loginTooManyConns     = 0x0206
	loginMissingParam     = 0x0207
	loginSessionTypeUnsup = 0x0209
	loginNoSession        = 0x020a
	loginInvalidDuring    = 0x020b
	loginTargetError      = 0x0300
)

// loginReq is the decoded header of a Login Request (RFC 7143 11.12).
type loginReq struct {
	transit, cont bool
	csg, nsg      byte
	vmax, vmin    byte
	isid          [6]byte
	tsih          uint16
	itt           uint32
	cid           uint16
	cmdSN         uint32
	expStatSN     uint32
}

func decodeLoginReq(h *bhs) loginReq {
	r := loginReq{
		transit: h[1]&0x80 != 0, cont: h[1]&0x40 != 0,
		csg: (h[1] >> 2) & 3, nsg: h[1] & 3, vmax: h[2], vmin: h[3],
		tsih: h.u16(14), itt: h.itt(), cid: h.u16(20), cmdSN: h.u32(24), expStatSN: h.u32(28),
	}
	copy(r.isid[:], h[8:14])
	return r
}

// loginResp is what one login step answers.
type loginResp struct {
	transit bool
	csg     byte
	nsg     byte
	text    []byte
	status  uint16
	done    bool // transit to FullFeaturePhase
}

// loginState accumulates one connection's login.
type loginState struct {
	lim            *limits
	targetName     string // this target's IQN
	chapUser       string
	chapSecret     string
	p              params
	first          bool
	initiatorName  string
	discovery      bool
	isid           [6]byte
	tsih           uint16
	authNone       bool
	chap           chapState
	declaredMRDSL  bool
	pending        []byte
	sentTPGT       bool
	negotiatedKeys map[string]bool
}

func newLoginState(lim *limits, iqn, user, secret string) *loginState {
	return &loginState{lim: lim, targetName: iqn, chapUser: user, chapSecret: secret,
		p: rfcDefaults(), first: true, negotiatedKeys: map[string]bool{}}
}

func (ls *loginState) chapRequired() bool { return ls.chapUser != "" }

func (ls *loginState) authComplete() bool {
	if ls.chapRequired() {
		return ls.chap.stage == chapDone
	}
	return true
}

func fail(status uint16, r *loginReq) loginResp {
	return loginResp{csg: r.csg, nsg: r.nsg, status: status}
}

// step processes one Login Request with its text and returns the response.
func (ls *loginState) step(r *loginReq, text []byte) loginResp {
	if r.vmin > 0 {
		return fail(loginUnsupportedVer, r)
	}
	if r.cont {
		if len(ls.pending)+len(text) > 64<<10 {
			return fail(loginInitiatorError, r)
		}
		ls.pending = append(ls.pending, text...)
		return loginResp{csg: r.csg, nsg: r.nsg}
	}
	full := append(ls.pending, text...)
	ls.pending = nil
	keys, err := parseText(full)
	if err != nil {
		return fail(loginInitiatorError, r)
	}
	if ls.first {
		if st := ls.firstPDU(r, keys); st != loginSuccess {
			return fail(st, r)
		}
	}
	var out []byte
	switch r.csg {
	case stageSecurity:
		var st uint16
		out, st = ls.security(keys)
		if st != loginSuccess {
			return fail(st, r)
		}
	case stageOperational:
		if !ls.authComplete() {
			return fail(loginAuthFailed, r)
		}
		out = ls.operational(keys, nil)
		if !ls.declaredMRDSL {
			out = appendText(out, "MaxRecvDataSegmentLength", fmt.Sprint(ls.lim.maxRecvDSL))
			ls.declaredMRDSL = true
		}
	default:
		return fail(loginInvalidDuring, r)
	}
	if ls.first && !ls.discovery && !ls.sentTPGT {
		out = appendText(out, "TargetPortalGroupTag", "1")
		ls.sentTPGT = true
	}
	ls.first = false
	return ls.transition(r, out)
}

// transition decides whether to move to the next stage (T bit).
func (ls *loginState) transition(r *loginReq, out []byte) loginResp {
	resp := loginResp{csg: r.csg, nsg: r.nsg, text: out}
	if !r.transit {
		resp.nsg = 0
		return resp
	}
	switch {
	case r.csg == stageSecurity && (r.nsg == stageOperational || r.nsg == stageFullFeature):
		if !ls.authComplete() {
			resp.nsg = 0 // keep negotiating (CHAP exchange in progress)
			return resp
		}
	case r.csg == stageOperational && r.nsg == stageFullFeature:
	default:
		return fail(loginInitiatorError, r)
	}
	resp.transit = true
	if r.nsg == stageFullFeature {
		resp.done = true
		if ls.declaredMRDSL {
			ls.p.maxRecvDSL = ls.lim.maxRecvDSL
		}
		ls.p.validate()
	}
	return resp
}

// firstPDU checks the declarations of the first Login Request.
func (ls *loginState) firstPDU(r *loginReq, keys []kv) uint16 {
	ls.isid, ls.tsih = r.isid, r.tsih
	sessionType := "Normal"
	target := ""
	for _, k := range keys {
		switch k.key {
		case "InitiatorName":
			ls.initiatorName = k.value
		case "SessionType":
			sessionType = k.value
		case "TargetName":
			target = k.value
		}
	}
	if ls.initiatorName == "" {
		return loginMissingParam
	}
	switch sessionType {
	case "Discovery":
		ls.discovery = true
	case "Normal":
		if target == "" {
			return loginMissingParam
		}
		if !strings.EqualFold(target, ls.targetName) {
			return loginNotFound
		}
	default:
		return loginSessionTypeUnsup
	}
	return loginSuccess
}

// security handles the keys of the SecurityNegotiation stage.
func (ls *loginState) security(keys []kv) ([]byte, uint16) {
	var out []byte
	var chapN, chapR string
	var op []kv
	for _, k := range keys {
		switch k.key {
		case "AuthMethod":
			v := ls.pickAuth(k.value)
			out = appendText(out, "AuthMethod", v)
			if v == valReject {
				return out, loginAuthFailed
			}
		case "CHAP_A":
			if ls.chap.stage != chapSelected {
				return out, loginAuthFailed
			}
			m, err := ls.chap.makeChallenge(k.value)
			if err != nil {
				return out, loginAuthFailed
			}
			for _, key := range []string{"CHAP_A", "CHAP_I", "CHAP_C"} {
				out = appendText(out, key, m[key])
			}
		case "CHAP_N":
			chapN = k.value
		case "CHAP_R":
			chapR = k.value
		case "CHAP_I", "CHAP_C": // mutual CHAP: no target secret configured
			return out, loginAuthFailed
		default:
			op = append(op, k)
		}
	}
	if chapN != "" || chapR != "" {
		if err := ls.chap.verify(ls.chapUser, ls.chapSecret, chapN, chapR); err != nil {
			return out, loginAuthFailed
		}
	}
	return ls.operational(op, out), loginSuccess
}

// pickAuth answers AuthMethod: CHAP when configured, else None.
func (ls *loginState) pickAuth(offer string) string {
	want := "None"
	if ls.chapRequired() {
		want = "CHAP"
	}
	for _, v := range strings.Split(offer, ",") {
		if v == want {
			if want == "CHAP" {
				ls.chap.stage = chapSelected
			} else {
				ls.authNone = true
			}
			return want
		}
	}
	return valReject
}

// operational negotiates operational keys and appends the answers to out.
func (ls *loginState) operational(keys []kv, out []byte) []byte {
	for _, k := range keys {
		if ls.discovery && discoveryIrrelevant(k.key) {
			out = appendText(out, k.key, valIrrelevant)
			continue
		}
		if ls.negotiatedKeys[k.key] && k.key != "MaxRecvDataSegmentLength" {
			continue // answered once already
		}
		v, send := negotiateOp(&ls.p, ls.lim, k.key, k.value)
		ls.negotiatedKeys[k.key] = true
		if send {
			out = appendText(out, k.key, v)
		}
	}
	return out
}

// discoveryIrrelevant are keys that mean nothing in a discovery session.
func discoveryIrrelevant(key string) bool {
	switch key {
	case "MaxBurstLength", "FirstBurstLength", "InitialR2T", "ImmediateData", "MaxOutstandingR2T",
		"DataPDUInOrder", "DataSequenceInOrder", "MaxConnections":
		return true
	}
	return false
}

// encodeLoginResp builds a Login Response header (RFC 7143 11.13).
func encodeLoginResp(r *loginReq, resp *loginResp, tsih uint16, statSN, expCmdSN, maxCmdSN uint32) bhs {
	var h bhs
	h[0] = opLoginResp
	if resp.transit {
		h[1] |= 0x80
	}
	h[1] |= resp.csg<<2 | resp.nsg&3
	h[2], h[3] = 0, 0
	copy(h[8:14], r.isid[:])
	h.setU16(14, tsih)
	h.setU32(16, r.itt)
	h.setU32(24, statSN)
	h.setU32(28, expCmdSN)
	h.setU32(32, maxCmdSN)
	binary.BigEndian.PutUint16(h[36:38], resp.status)
	h.setDataLen(len(resp.text))
	return h
}
