package nbd

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	const size, maxp = 1 << 20, 1 << 16
	cases := []struct {
		name string
		req  request
		want verdict
	}{
		{"read ok", request{typ: cmdRead, offset: 0, length: 4096}, verdict{}},
		{"read to end", request{typ: cmdRead, offset: size - 512, length: 512}, verdict{}},
		{"read zero length", request{typ: cmdRead, offset: size, length: 0}, verdict{}},
		{"read past end", request{typ: cmdRead, offset: size - 512, length: 1024}, verdict{errno: errnoInval}},
		{"read offset overflow", request{typ: cmdRead, offset: ^uint64(0) - 10, length: 4096}, verdict{errno: errnoInval}},
		{"read oversize", request{typ: cmdRead, length: maxp + 1}, verdict{errno: errnoOverflow}},
		{"read with FUA accepted", request{typ: cmdRead, flags: cmdFlagFUA, length: 512}, verdict{}},
		{"read with DF", request{typ: cmdRead, flags: cmdFlagDF, length: 512}, verdict{errno: errnoInval}},
		{"write ok", request{typ: cmdWrite, flags: cmdFlagFUA, offset: 4096, length: 4096}, verdict{}},
		{"write past end", request{typ: cmdWrite, offset: size, length: 4096}, verdict{errno: errnoNoSpc, discard: 4096}},
		{"write oversize", request{typ: cmdWrite, length: maxp + 1}, verdict{errno: errnoOverflow, discard: maxp + 1}},
		{"write unknown flag", request{typ: cmdWrite, flags: 1 << 9, length: 8}, verdict{errno: errnoInval, discard: 8}},
		{"write NO_HOLE", request{typ: cmdWrite, flags: cmdFlagNoHole, length: 8}, verdict{errno: errnoInval, discard: 8}},
		{"flush ignores offset", request{typ: cmdFlush, offset: 1 << 40}, verdict{}},
		{"trim large", request{typ: cmdTrim, offset: 0, length: size}, verdict{}},
		{"trim past end", request{typ: cmdTrim, offset: 1, length: size}, verdict{errno: errnoInval}},
		{"zeroes larger than payload cap", request{typ: cmdWriteZeroes, flags: cmdFlagNoHole | cmdFlagFUA, length: size}, verdict{}},
		{"zeroes past end", request{typ: cmdWriteZeroes, offset: size, length: 1}, verdict{errno: errnoNoSpc}},
		{"zeroes FAST_ZERO not offered", request{typ: cmdWriteZeroes, flags: cmdFlagFastZero, length: 1}, verdict{errno: errnoInval}},
		{"cache unsupported", request{typ: cmdCache, length: 1}, verdict{errno: errnoInval}},
		{"block status not negotiated", request{typ: cmdBlockStatus, length: 1}, verdict{errno: errnoInval}},
		{"unknown command", request{typ: 99, length: 1 << 30}, verdict{errno: errnoInval}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := classify(c.req, size, maxp); got != c.want {
				t.Fatalf("classify(%+v) = %+v, want %+v", c.req, got, c.want)
			}
		})
	}
}

func testExport() export {
	return export{name: "vol", description: "d", size: 1 << 30, flags: transmissionFlags,
		minBlock: 1, prefBlock: 4096, maxPayload: DefaultMaxPayload}
}

func TestDecideOption(t *testing.T) {
	exp := testExport()
	cases := []struct {
		name      string
		opt       uint32
		data      []byte
		wantTypes []uint32
		wantNext  nextStep
	}{
		{"export name", optExportName, []byte("vol"), nil, stepTransmit},
		{"default export name", optExportName, nil, nil, stepTransmit},
		{"wrong export name closes", optExportName, []byte("other"), nil, stepClose},
		{"abort", optAbort, nil, []uint32{repAck}, stepClose},
		{"list", optList, nil, []uint32{repServer, repAck}, stepContinue},
		{"list with data", optList, []byte{1}, []uint32{repErrInvalid}, stepContinue},
		{"info", optInfo, goData("vol"), []uint32{repInfo, repInfo, repAck}, stepContinue},
		{"info name+desc", optInfo, goData("vol", infoName, infoDescription, infoName, 77), []uint32{repInfo, repInfo, repInfo, repInfo, repAck}, stepContinue},
		{"go", optGo, goData("vol"), []uint32{repInfo, repInfo, repAck}, stepTransmit},
		{"go default", optGo, goData(""), []uint32{repInfo, repInfo, repAck}, stepTransmit},
		{"go unknown export", optGo, goData("nope"), []uint32{repErrUnknown}, stepContinue},
		{"go truncated", optGo, goData("vol")[:5], []uint32{repErrInvalid}, stepContinue},
		{"go trailing bytes", optGo, append(goData("vol"), 0), []uint32{repErrInvalid}, stepContinue},
		{"go name too long", optGo, goData(strings.Repeat("x", 5000)), []uint32{repErrInvalid}, stepContinue},
		{"starttls", optStartTLS, nil, []uint32{repErrUnsup}, stepContinue},
		{"structured reply", optStructuredReply, nil, []uint32{repErrUnsup}, stepContinue},
		{"meta context", optSetMetaContext, []byte{0, 0, 0, 0}, []uint32{repErrUnsup}, stepContinue},
		{"unknown", 0xdead, nil, []uint32{repErrUnsup}, stepContinue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := decideOption(c.opt, c.data, &exp)
			var types []uint32
			for _, r := range out.replies {
				types = append(types, r.typ)
			}
			if out.next != c.wantNext || !equalU32(types, c.wantTypes) {
				t.Fatalf("decideOption(%d) = types %#x next %d, want %#x next %d", c.opt, types, out.next, c.wantTypes, c.wantNext)
			}
		})
	}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInfoPayloads(t *testing.T) {
	exp := testExport()
	out := decideOption(optGo, goData("", infoName, infoDescription), &exp)
	want := map[uint16][]byte{
		infoExport:      binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint64(nil, 1<<30), transmissionFlags),
		infoBlockSize:   {0, 0, 0, 1, 0, 0, 0x10, 0, 0x02, 0, 0, 0},
		infoName:        []byte("vol"),
		infoDescription: []byte("d"),
	}
	for _, r := range out.replies[:4] {
		typ := binary.BigEndian.Uint16(r.data)
		if !bytes.Equal(r.data[2:], want[typ]) {
			t.Errorf("info %d = % x, want % x", typ, r.data[2:], want[typ])
		}
		delete(want, typ)
	}
	if len(want) != 0 {
		t.Fatalf("missing info replies %v", want)
	}
	list := decideOption(optList, nil, &exp)
	if !bytes.Equal(list.replies[0].data, []byte{0, 0, 0, 3, 'v', 'o', 'l'}) {
		t.Fatalf("NBD_REP_SERVER = % x", list.replies[0].data)
	}
}

func TestParseRequest(t *testing.T) {
	var b [requestLen]byte
	copy(b[:], []byte{0x25, 0x60, 0x95, 0x13, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x02, 0})
	req, err := parseRequest(&b)
	if err != nil {
		t.Fatal(err)
	}
	want := request{flags: cmdFlagFUA, typ: cmdWriteZeroes, handle: 0x0102030405060708, offset: 4096, length: 512}
	if req != want {
		t.Fatalf("parseRequest = %+v, want %+v", req, want)
	}
	b[0] = 0
	if _, err := parseRequest(&b); err == nil {
		t.Fatal("bad magic accepted")
	}
}

func TestParseListen(t *testing.T) {
	for spec, want := range map[string]string{
		"unix:/run/x/../v.sock": "unix /run/v.sock",
		"tcp:127.0.0.1:0":       "tcp 127.0.0.1:0",
		"tcp:[::1]:10809":       "tcp [::1]:10809",
		"tcp::10809":            "tcp :10809",
		"unix:rel.sock":         "error",
		"tcp:host":              "error",
		"udp:1.2.3.4:5":         "error",
		"":                      "error",
		"/abs/path":             "error",
	} {
		n, a, err := ParseListen(spec)
		got := n + " " + a
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParseListen(%q) = %q (%v), want %q", spec, got, err, want)
		}
	}
}
