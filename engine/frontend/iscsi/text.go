package iscsi

import (
	"bytes"
	"errors"
	"fmt"
)

// Text keys (RFC 7143 6.1): "key=value" pairs, each followed by a NUL byte.

// kv is one key=value pair, in the order received.
type kv struct{ key, value string }

const (
	maxKeyLen   = 63
	maxValueLen = 8192
	maxTextKeys = 256
)

var errBadText = errors.New("iscsi: malformed text key")

// parseText splits a text data segment into pairs. A trailing pair without
// NUL is accepted (some initiators omit it in the last PDU). Keys longer
// than 63 bytes, values longer than 8192 bytes, a pair without '=' or more
// than 256 pairs are errors.
func parseText(data []byte) ([]kv, error) {
	var out []kv
	for len(data) > 0 {
		end := bytes.IndexByte(data, 0)
		var pair []byte
		if end < 0 {
			pair, data = data, nil
		} else {
			pair, data = data[:end], data[end+1:]
		}
		if len(pair) == 0 {
			continue // padding NULs
		}
		eq := bytes.IndexByte(pair, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("%w: %q has no key=value", errBadText, truncate(pair))
		}
		if eq > maxKeyLen {
			return nil, fmt.Errorf("%w: key %q longer than %d", errBadText, truncate(pair[:eq]), maxKeyLen)
		}
		if len(pair)-eq-1 > maxValueLen {
			return nil, fmt.Errorf("%w: value of %s longer than %d", errBadText, pair[:eq], maxValueLen)
		}
		if len(out) >= maxTextKeys {
			return nil, fmt.Errorf("%w: more than %d keys", errBadText, maxTextKeys)
		}
		out = append(out, kv{string(pair[:eq]), string(pair[eq+1:])})
	}
	return out, nil
}

func truncate(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// appendText appends "key=value\0".
func appendText(dst []byte, key, value string) []byte {
	dst = append(dst, key...)
	dst = append(dst, '=')
	dst = append(dst, value...)
	return append(dst, 0)
}
