package nbd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxOptionLen caps the data of one option request (bytes). Export names are
// at most 4096 bytes by the spec, so NBD_OPT_GO fits easily; longer options are
// read and discarded (answered NBD_REP_ERR_TOO_BIG) without being buffered.
const maxOptionLen = 64 << 10

// export is what option haggling tells a client about the volume. It is a
// snapshot taken when an option is answered, so Expand is seen by every
// negotiation that starts afterwards.
type export struct {
	name        string
	description string
	size        uint64
	flags       uint16 // transmission flags
	minBlock    uint32 // NBD_INFO_BLOCK_SIZE minimum (power of 2, 1..64 KiB)
	prefBlock   uint32 // preferred block size (power of 2)
	maxPayload  uint32 // maximum payload of READ/WRITE
}

// matches reports whether a client-supplied export name selects this export.
// The empty name is the spec's "default export" and selects the volume too.
func (e *export) matches(name string) bool { return name == "" || name == e.name }

// optReply is one fixed-newstyle option reply: its type and payload.
type optReply struct {
	typ  uint32
	data []byte
}

// nextStep says what the connection does after an option was answered.
type nextStep int

const (
	stepContinue nextStep = iota // read the next option
	stepTransmit                 // enter the transmission phase
	stepClose                    // close the connection (abort or unrecoverable)
)

// optOutcome is the decision for one option: the replies to send, in order,
// and what comes next. exportNameReply means "answer NBD_OPT_EXPORT_NAME with
// the size/flags block", which has no option reply header.
type optOutcome struct {
	replies         []optReply
	next            nextStep
	exportNameReply bool
}

// errorReply builds an error outcome whose payload is a human-readable message,
// as the spec allows for every error reply.
func errorReply(typ uint32, format string, args ...any) optOutcome {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxStringBytes {
		msg = msg[:maxStringBytes]
	}
	return optOutcome{replies: []optReply{{typ: typ, data: []byte(msg)}}, next: stepContinue}
}

// decideOption answers one option request of fixed newstyle negotiation. It is
// pure: data is the option payload (at most maxOptionLen bytes) and exp the
// export as it is now. Source: proto.md "Option types" and "Option reply types".
func decideOption(opt uint32, data []byte, exp *export) optOutcome {
	switch opt {
	case optExportName:
		// No error reply is possible for EXPORT_NAME: the spec says terminate.
		if !exp.matches(string(data)) {
			return optOutcome{next: stepClose}
		}
		return optOutcome{next: stepTransmit, exportNameReply: true}
	case optAbort:
		return optOutcome{replies: []optReply{{typ: repAck}}, next: stepClose}
	case optList:
		if len(data) != 0 {
			return errorReply(repErrInvalid, "NBD_OPT_LIST takes no data, got %d bytes", len(data))
		}
		srv := make([]byte, 4+len(exp.name))
		binary.BigEndian.PutUint32(srv, uint32(len(exp.name)))
		copy(srv[4:], exp.name)
		return optOutcome{replies: []optReply{{typ: repServer, data: srv}, {typ: repAck}}, next: stepContinue}
	case optInfo, optGo:
		return decideInfo(opt, data, exp)
	case optStartTLS:
		return errorReply(repErrUnsup, "TLS is not supported by this server")
	case optStructuredReply:
		return errorReply(repErrUnsup, "structured replies are not supported; simple replies are used")
	default:
		return errorReply(repErrUnsup, "option %d is not supported", opt)
	}
}

// infoRequest is the parsed payload of NBD_OPT_INFO / NBD_OPT_GO:
// u32 name length, name, u16 count, count x u16 information types.
type infoRequest struct {
	name  string
	infos []uint16
}

// errInfoLayout reports a malformed NBD_OPT_INFO/NBD_OPT_GO payload.
var errInfoLayout = errors.New("malformed NBD_OPT_INFO/NBD_OPT_GO data")

// parseInfoRequest decodes the NBD_OPT_INFO / NBD_OPT_GO payload. The lengths
// it announces must add up to exactly len(data).
func parseInfoRequest(data []byte) (infoRequest, error) {
	if len(data) < 6 {
		return infoRequest{}, fmt.Errorf("%w: %d bytes, need at least 6", errInfoLayout, len(data))
	}
	nameLen := uint64(binary.BigEndian.Uint32(data[0:4]))
	if nameLen > maxStringBytes {
		return infoRequest{}, fmt.Errorf("%w: export name of %d bytes exceeds %d", errInfoLayout, nameLen, maxStringBytes)
	}
	if nameLen+6 > uint64(len(data)) {
		return infoRequest{}, fmt.Errorf("%w: name length %d exceeds the option data", errInfoLayout, nameLen)
	}
	rest := data[4+nameLen:]
	n := int(binary.BigEndian.Uint16(rest[0:2]))
	rest = rest[2:]
	if len(rest) != 2*n {
		return infoRequest{}, fmt.Errorf("%w: %d information requests need %d bytes, have %d", errInfoLayout, n, 2*n, len(rest))
	}
	req := infoRequest{name: string(data[4 : 4+nameLen]), infos: make([]uint16, n)}
	for i := range req.infos {
		req.infos[i] = binary.BigEndian.Uint16(rest[2*i:])
	}
	return req, nil
}

// decideInfo answers NBD_OPT_INFO and NBD_OPT_GO: NBD_INFO_EXPORT and
// NBD_INFO_BLOCK_SIZE always, NBD_INFO_NAME and NBD_INFO_DESCRIPTION when asked
// for, then NBD_REP_ACK. GO then enters transmission.
func decideInfo(opt uint32, data []byte, exp *export) optOutcome {
	req, err := parseInfoRequest(data)
	if err != nil {
		return errorReply(repErrInvalid, "%v", err)
	}
	if !exp.matches(req.name) {
		return errorReply(repErrUnknown, "unknown export %q; this server exports %q", req.name, exp.name)
	}
	var out optOutcome
	info := make([]byte, 12)
	binary.BigEndian.PutUint16(info[0:2], infoExport)
	binary.BigEndian.PutUint64(info[2:10], exp.size)
	binary.BigEndian.PutUint16(info[10:12], exp.flags)
	out.replies = append(out.replies, optReply{typ: repInfo, data: info})

	bs := make([]byte, 14)
	binary.BigEndian.PutUint16(bs[0:2], infoBlockSize)
	binary.BigEndian.PutUint32(bs[2:6], exp.minBlock)
	binary.BigEndian.PutUint32(bs[6:10], exp.prefBlock)
	binary.BigEndian.PutUint32(bs[10:14], exp.maxPayload)
	out.replies = append(out.replies, optReply{typ: repInfo, data: bs})

	for _, t := range dedupe(req.infos) {
		switch {
		case t == infoName:
			out.replies = append(out.replies, optReply{typ: repInfo, data: infoString(infoName, exp.name)})
		case t == infoDescription && exp.description != "":
			out.replies = append(out.replies, optReply{typ: repInfo, data: infoString(infoDescription, exp.description)})
		}
	}
	out.replies = append(out.replies, optReply{typ: repAck})
	out.next = stepContinue
	if opt == optGo {
		out.next = stepTransmit
	}
	return out
}

// infoString encodes an NBD_INFO_NAME / NBD_INFO_DESCRIPTION payload.
func infoString(typ uint16, s string) []byte {
	b := make([]byte, 2+len(s))
	binary.BigEndian.PutUint16(b, typ)
	copy(b[2:], s)
	return b
}

// dedupe returns the information types in request order without repeats, so
// a client asking for NAME twice gets it once.
func dedupe(in []uint16) []uint16 {
	var out []uint16
	for _, t := range in {
		seen := false
		for _, o := range out {
			seen = seen || o == t
		}
		if !seen {
			out = append(out, t)
		}
	}
	return out
}

// negotiation runs the handshake on one connection: greeting, client flags,
// then options until GO/EXPORT_NAME (transmission), ABORT or an error.
type negotiation struct {
	r   *bufio.Reader
	w   *bufio.Writer
	exp func() export // current export, read at each option
}

// errClientFlags reports client flags this server did not offer; the spec
// says the server must then drop the connection.
var errClientFlags = errors.New("nbd: unknown client flags")

// errAborted reports that the client ended negotiation (NBD_OPT_ABORT or an
// unknown export on NBD_OPT_EXPORT_NAME).
var errAborted = errors.New("nbd: negotiation ended without an export")

// run performs the handshake. It returns nil when the transmission phase
// starts; any error means the connection must be closed.
func (n *negotiation) run() error {
	var greet [serverGreetLen]byte
	binary.BigEndian.PutUint64(greet[0:8], magicInit)
	binary.BigEndian.PutUint64(greet[8:16], magicOpt)
	binary.BigEndian.PutUint16(greet[16:18], flagFixedNewstyle|flagNoZeroes)
	if _, err := n.w.Write(greet[:]); err != nil {
		return err
	}
	if err := n.w.Flush(); err != nil {
		return err
	}
	var cf [4]byte
	if _, err := io.ReadFull(n.r, cf[:]); err != nil {
		return err
	}
	clientFlags := binary.BigEndian.Uint32(cf[:])
	if clientFlags&^uint32(flagFixedNewstyle|flagNoZeroes) != 0 {
		return fmt.Errorf("%w: %#x", errClientFlags, clientFlags)
	}
	noZeroes := clientFlags&uint32(flagNoZeroes) != 0
	for {
		done, err := n.option(noZeroes)
		if err != nil || done {
			return err
		}
	}
}

// option reads and answers one option. done is true when transmission starts.
func (n *negotiation) option(noZeroes bool) (done bool, err error) {
	var hdr [optHeaderLen]byte
	if _, err := io.ReadFull(n.r, hdr[:]); err != nil {
		return false, err
	}
	if binary.BigEndian.Uint64(hdr[0:8]) != magicOpt {
		return false, fmt.Errorf("%w in option request", errBadMagic)
	}
	opt := binary.BigEndian.Uint32(hdr[8:12])
	length := binary.BigEndian.Uint32(hdr[12:16])
	exp := n.exp()
	var out optOutcome
	if length > maxOptionLen {
		if opt == optExportName {
			return false, fmt.Errorf("%w: export name of %d bytes", errAborted, length)
		}
		if _, err := io.CopyN(io.Discard, n.r, int64(length)); err != nil {
			return false, err
		}
		out = errorReply(repErrTooBig, "option data of %d bytes exceeds the limit of %d", length, maxOptionLen)
	} else {
		data := make([]byte, length)
		if _, err := io.ReadFull(n.r, data); err != nil {
			return false, err
		}
		out = decideOption(opt, data, &exp)
	}
	if err := n.send(opt, out, &exp, noZeroes); err != nil {
		return false, err
	}
	switch out.next {
	case stepTransmit:
		return true, nil
	case stepClose:
		return false, errAborted
	}
	return false, nil
}

// send writes the replies of one outcome and flushes them.
func (n *negotiation) send(opt uint32, out optOutcome, exp *export, noZeroes bool) error {
	if out.exportNameReply {
		var b [exportNameRepLen + exportNameTail]byte
		binary.BigEndian.PutUint64(b[0:8], exp.size)
		binary.BigEndian.PutUint16(b[8:10], exp.flags)
		end := len(b)
		if noZeroes {
			end = exportNameRepLen
		}
		if _, err := n.w.Write(b[:end]); err != nil {
			return err
		}
	}
	for _, r := range out.replies {
		var h [optReplyHdrLen]byte
		binary.BigEndian.PutUint64(h[0:8], magicOptReply)
		binary.BigEndian.PutUint32(h[8:12], opt)
		binary.BigEndian.PutUint32(h[12:16], r.typ)
		binary.BigEndian.PutUint32(h[16:20], uint32(len(r.data)))
		if _, err := n.w.Write(h[:]); err != nil {
			return err
		}
		if _, err := n.w.Write(r.data); err != nil {
			return err
		}
	}
	return n.w.Flush()
}
