package nbd

import (
	"encoding/binary"
	"errors"
)

// Wire constants of the NBD protocol. Source: the NBD protocol specification,
// github.com/NetworkBlockDevice/nbd doc/proto.md ("Values" section, plus the
// INFO, WRITE_ZEROES and FAST_ZERO extensions merged into it). All integers on
// the wire are big-endian.
const (
	magicInit        uint64 = 0x4e42444d41474943 // "NBDMAGIC", first 8 bytes the server sends
	magicOpt         uint64 = 0x49484156454F5054 // "IHAVEOPT", newstyle magic and option request magic
	magicOptReply    uint64 = 0x0003e889045565a9 // option reply magic (fixed newstyle)
	magicRequest     uint32 = 0x25609513         // NBD_REQUEST_MAGIC
	magicSimpleReply uint32 = 0x67446698         // NBD_SIMPLE_REPLY_MAGIC
)

// Handshake flags (server, 16 bits) and client flags (32 bits) share bits.
const (
	flagFixedNewstyle uint16 = 1 << 0 // NBD_FLAG_FIXED_NEWSTYLE / NBD_FLAG_C_FIXED_NEWSTYLE
	flagNoZeroes      uint16 = 1 << 1 // NBD_FLAG_NO_ZEROES / NBD_FLAG_C_NO_ZEROES
)

// Transmission flags (16 bits) sent with the export size.
const (
	tflagHasFlags        uint16 = 1 << 0
	tflagReadOnly        uint16 = 1 << 1
	tflagSendFlush       uint16 = 1 << 2
	tflagSendFUA         uint16 = 1 << 3
	tflagRotational      uint16 = 1 << 4
	tflagSendTrim        uint16 = 1 << 5
	tflagSendWriteZeroes uint16 = 1 << 6
	tflagSendDF          uint16 = 1 << 7
	tflagCanMultiConn    uint16 = 1 << 8
	tflagSendResize      uint16 = 1 << 9
	tflagSendCache       uint16 = 1 << 10
	tflagSendFastZero    uint16 = 1 << 11
)

// transmissionFlags is what this server advertises: flush, FUA, trim, write
// zeroes, and multi-connection (the Backend has no per-connection cache and a
// flush reaches every replica, so effects are visible on every connection).
const transmissionFlags = tflagHasFlags | tflagSendFlush | tflagSendFUA |
	tflagSendTrim | tflagSendWriteZeroes | tflagCanMultiConn

// Option types (option haggling).
const (
	optExportName      uint32 = 1
	optAbort           uint32 = 2
	optList            uint32 = 3
	optPeekExport      uint32 = 4
	optStartTLS        uint32 = 5
	optInfo            uint32 = 6
	optGo              uint32 = 7
	optStructuredReply uint32 = 8
	optListMetaContext uint32 = 9
	optSetMetaContext  uint32 = 10
	optExtendedHeaders uint32 = 11
)

// Option reply types. Error replies have bit 31 set.
const (
	repAck         uint32 = 1
	repServer      uint32 = 2
	repInfo        uint32 = 3
	repMetaContext uint32 = 4

	repFlagError        uint32 = 1 << 31
	repErrUnsup         uint32 = repFlagError | 1
	repErrPolicy        uint32 = repFlagError | 2
	repErrInvalid       uint32 = repFlagError | 3
	repErrPlatform      uint32 = repFlagError | 4
	repErrTLSReqd       uint32 = repFlagError | 5
	repErrUnknown       uint32 = repFlagError | 6
	repErrShutdown      uint32 = repFlagError | 7
	repErrBlockSizeReqd uint32 = repFlagError | 8
	repErrTooBig        uint32 = repFlagError | 9
)

// Information types carried in NBD_REP_INFO replies to NBD_OPT_INFO / NBD_OPT_GO.
const (
	infoExport      uint16 = 0 // u64 size, u16 transmission flags
	infoName        uint16 = 1 // string
	infoDescription uint16 = 2 // string
	infoBlockSize   uint16 = 3 // u32 minimum, u32 preferred, u32 maximum payload
)

// Command types (transmission phase).
const (
	cmdRead        uint16 = 0
	cmdWrite       uint16 = 1
	cmdDisc        uint16 = 2
	cmdFlush       uint16 = 3
	cmdTrim        uint16 = 4
	cmdCache       uint16 = 5
	cmdWriteZeroes uint16 = 6
	cmdBlockStatus uint16 = 7
)

// Command flags.
const (
	cmdFlagFUA      uint16 = 1 << 0
	cmdFlagNoHole   uint16 = 1 << 1
	cmdFlagDF       uint16 = 1 << 2
	cmdFlagReqOne   uint16 = 1 << 3
	cmdFlagFastZero uint16 = 1 << 4
)

// Error values of simple replies (the spec fixes these numbers, which match
// Linux errno values).
const (
	errnoPerm      uint32 = 1
	errnoIO        uint32 = 5
	errnoNoMem     uint32 = 12
	errnoInval     uint32 = 22
	errnoNoSpc     uint32 = 28
	errnoOverflow  uint32 = 75
	errnoNotSup    uint32 = 95
	errnoShutdown  uint32 = 108
	maxStringBytes        = 4096 // the spec's hard limit for names and messages
)

// Sizes of fixed wire structures, in bytes.
const (
	optHeaderLen     = 16  // u64 magic, u32 option, u32 length
	optReplyHdrLen   = 20  // u64 magic, u32 option, u32 reply type, u32 length
	requestLen       = 28  // u32 magic, u16 flags, u16 type, u64 handle, u64 offset, u32 length
	simpleReplyLen   = 16  // u32 magic, u32 error, u64 handle
	exportNameTail   = 124 // reserved zeroes after the NBD_OPT_EXPORT_NAME reply
	serverGreetLen   = 18  // NBDMAGIC, IHAVEOPT, u16 handshake flags
	exportNameRepLen = 10  // u64 size, u16 transmission flags
)

// errBadMagic is returned when a request or option does not start with the
// expected magic number: the peer does not speak NBD (or lost framing), and the
// connection is closed.
var errBadMagic = errors.New("nbd: bad magic")

// request is one decoded transmission-phase request header.
type request struct {
	flags  uint16
	typ    uint16
	handle uint64
	offset uint64
	length uint32
}

// parseRequest decodes a 28-byte request header. It returns errBadMagic when
// the magic is not NBD_REQUEST_MAGIC.
func parseRequest(b *[requestLen]byte) (request, error) {
	if binary.BigEndian.Uint32(b[0:4]) != magicRequest {
		return request{}, errBadMagic
	}
	return request{
		flags:  binary.BigEndian.Uint16(b[4:6]),
		typ:    binary.BigEndian.Uint16(b[6:8]),
		handle: binary.BigEndian.Uint64(b[8:16]),
		offset: binary.BigEndian.Uint64(b[16:24]),
		length: binary.BigEndian.Uint32(b[24:28]),
	}, nil
}

// putSimpleReply encodes a 16-byte simple reply header into b.
func putSimpleReply(b []byte, errno uint32, handle uint64) {
	binary.BigEndian.PutUint32(b[0:4], magicSimpleReply)
	binary.BigEndian.PutUint32(b[4:8], errno)
	binary.BigEndian.PutUint64(b[8:16], handle)
}

// cmdName names a command type for logs.
func cmdName(t uint16) string {
	switch t {
	case cmdRead:
		return "READ"
	case cmdWrite:
		return "WRITE"
	case cmdDisc:
		return "DISC"
	case cmdFlush:
		return "FLUSH"
	case cmdTrim:
		return "TRIM"
	case cmdCache:
		return "CACHE"
	case cmdWriteZeroes:
		return "WRITE_ZEROES"
	case cmdBlockStatus:
		return "BLOCK_STATUS"
	}
	return "unknown"
}
