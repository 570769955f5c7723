package iscsi

import (
	"crypto/md5" //nolint:gosec // CHAP with MD5 is what RFC 1994 and RFC 7143 12.1.3 define
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// CHAP (RFC 7143 12.1.3, RFC 1994): the target sends CHAP_A=5 (MD5), an
// identifier CHAP_I and a challenge CHAP_C; the initiator answers CHAP_N
// (its user name) and CHAP_R = MD5(CHAP_I || secret || CHAP_C).

const (
	chapAlgMD5       = "5"
	chapChallengeLen = 16
)

type chapStage int

const (
	chapIdle chapStage = iota
	chapSelected
	chapChallenged
	chapDone
)

type chapState struct {
	stage     chapStage
	id        byte
	challenge [chapChallengeLen]byte
}

var errCHAP = errors.New("iscsi: CHAP authentication failed")

// decodeBinary decodes a CHAP binary value: 0x-hex or 0b-base64 (RFC 7143 6.1).
func decodeBinary(v string) ([]byte, error) {
	switch {
	case strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X"):
		s := v[2:]
		if len(s)%2 == 1 {
			s = "0" + s
		}
		return hex.DecodeString(s)
	case strings.HasPrefix(v, "0b") || strings.HasPrefix(v, "0B"):
		return base64.StdEncoding.DecodeString(v[2:])
	}
	return nil, errCHAP
}

// challenge answers CHAP_A: pick MD5, make an identifier and challenge.
func (s *chapState) makeChallenge(algs string) (map[string]string, error) {
	ok := false
	for _, a := range strings.Split(algs, ",") {
		if a == chapAlgMD5 {
			ok = true
		}
	}
	if !ok {
		return nil, errCHAP
	}
	var id [1]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(s.challenge[:]); err != nil {
		return nil, err
	}
	s.id = id[0]
	s.stage = chapChallenged
	return map[string]string{
		"CHAP_A": chapAlgMD5,
		"CHAP_I": strconv.Itoa(int(s.id)),
		"CHAP_C": "0x" + hex.EncodeToString(s.challenge[:]),
	}, nil
}

// verify checks the initiator's CHAP_N and CHAP_R.
func (s *chapState) verify(user, secret, name, resp string) error {
	if s.stage != chapChallenged {
		return errCHAP
	}
	got, err := decodeBinary(resp)
	if err != nil {
		return errCHAP
	}
	want := chapResponse(s.id, secret, s.challenge[:])
	if subtle.ConstantTimeCompare([]byte(name), []byte(user)) != 1 || subtle.ConstantTimeCompare(got, want) != 1 {
		return errCHAP
	}
	s.stage = chapDone
	return nil
}

func chapResponse(id byte, secret string, challenge []byte) []byte {
	h := md5.New() //nolint:gosec
	h.Write([]byte{id})
	h.Write([]byte(secret))
	h.Write(challenge)
	return h.Sum(nil)
}
