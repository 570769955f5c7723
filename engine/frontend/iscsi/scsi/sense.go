package scsi

import "encoding/binary"

// Status is a SCSI status byte (SAM-5 5.3).
type Status byte

// Status codes returned in the iSCSI SCSI Response PDU.
const (
	StatusGood                Status = 0x00
	StatusCheckCondition      Status = 0x02
	StatusConditionMet        Status = 0x04
	StatusBusy                Status = 0x08
	StatusReservationConflict Status = 0x18
	StatusTaskSetFull         Status = 0x28
	StatusTaskAborted         Status = 0x40
)

// Sense keys (SPC-5 4.4.8, table 52).
const (
	KeyNoSense        byte = 0x0
	KeyRecoveredError byte = 0x1
	KeyNotReady       byte = 0x2
	KeyMediumError    byte = 0x3
	KeyHardwareError  byte = 0x4
	KeyIllegalRequest byte = 0x5
	KeyUnitAttention  byte = 0x6
	KeyDataProtect    byte = 0x7
	KeyAbortedCommand byte = 0xb
	KeyMiscompare     byte = 0xe
)

// ASC is an additional sense code and qualifier pair, ASC in the high byte
// (SPC-5 4.4.9, table 53 lists the values).
type ASC uint16

// Additional sense codes used by this device server.
const (
	ASCNoAdditionalSense          ASC = 0x0000
	ASCNotReadyManualIntervention ASC = 0x0403 // LOGICAL UNIT NOT READY, MANUAL INTERVENTION REQUIRED
	ASCNotReadyInitCmdRequired    ASC = 0x0402 // LOGICAL UNIT NOT READY, INITIALIZING COMMAND REQUIRED
	ASCWriteError                 ASC = 0x0c00
	ASCInvalidFieldInInfoUnit     ASC = 0x0e03
	ASCUnrecoveredReadError       ASC = 0x1100
	ASCParameterListLengthError   ASC = 0x1a00
	ASCMiscompareDuringVerify     ASC = 0x1d00
	ASCInvalidOpcode              ASC = 0x2000
	ASCLBAOutOfRange              ASC = 0x2100
	ASCInvalidFieldInCDB          ASC = 0x2400
	ASCLUNotSupported             ASC = 0x2500
	ASCInvalidFieldInParamList    ASC = 0x2600
	ASCInvalidReleaseOfPR         ASC = 0x2604
	ASCWriteProtected             ASC = 0x2700
	ASCSoftwareWriteProtected     ASC = 0x2702
	ASCPowerOnReset               ASC = 0x2900
	ASCBusDeviceReset             ASC = 0x2903
	ASCITNexusLoss                ASC = 0x2907
	ASCModeParametersChanged      ASC = 0x2a01
	ASCReservationsPreempted      ASC = 0x2a03
	ASCReservationsReleased       ASC = 0x2a04
	ASCRegistrationsPreempted     ASC = 0x2a05
	ASCCapacityDataChanged        ASC = 0x2a09
	ASCCommandSequenceError       ASC = 0x2c00
	ASCSavingParamsNotSupported   ASC = 0x3900
	ASCMediumNotPresent           ASC = 0x3a00
	ASCInternalTargetFailure      ASC = 0x4400
	ASCMediumRemovalPrevented     ASC = 0x5302
	ASCInsufficientRegResources   ASC = 0x5504
	ASCReportedLunsDataChanged    ASC = 0x3f0e
	ASCDataPhaseError             ASC = 0x4b00
)

// Sense describes a CHECK CONDITION: key, ASC/ASCQ and optional fields. The
// zero value means "no sense".
type Sense struct {
	Key byte
	ASC ASC
	// Info is the INFORMATION field (e.g. the offset of the first
	// miscompare); valid when HasInfo.
	Info    uint64
	HasInfo bool
	// Field pointer (sense-key specific, SPC-5 4.4.2.4.2): byte FieldByte,
	// bit FieldBit (when FieldBitValid) of the CDB (FieldInCDB) or of the
	// parameter list.
	FieldValid    bool
	FieldInCDB    bool
	FieldByte     uint16
	FieldBit      uint8
	FieldBitValid bool
}

// Error is a failed command: a status (usually CHECK CONDITION or
// RESERVATION CONFLICT) and, for CHECK CONDITION, sense data.
type Error struct {
	Status Status
	Sense  Sense
}

func (e *Error) Error() string { return "scsi: command failed" }

func checkCondition(key byte, asc ASC) *Error {
	return &Error{Status: StatusCheckCondition, Sense: Sense{Key: key, ASC: asc}}
}

// errInvalidCDB is INVALID FIELD IN CDB pointing at byte b (bit bit when >= 0).
func errInvalidCDB(b int, bit int) *Error {
	e := checkCondition(KeyIllegalRequest, ASCInvalidFieldInCDB)
	e.Sense.FieldValid, e.Sense.FieldInCDB, e.Sense.FieldByte = true, true, uint16(b)
	if bit >= 0 {
		e.Sense.FieldBitValid, e.Sense.FieldBit = true, uint8(bit)
	}
	return e
}

// errInvalidParam is INVALID FIELD IN PARAMETER LIST pointing at byte b.
func errInvalidParam(b int) *Error {
	e := checkCondition(KeyIllegalRequest, ASCInvalidFieldInParamList)
	e.Sense.FieldValid, e.Sense.FieldByte = true, uint16(b)
	return e
}

var (
	errInvalidOpcode   = checkCondition(KeyIllegalRequest, ASCInvalidOpcode)
	errLBAOutOfRange   = checkCondition(KeyIllegalRequest, ASCLBAOutOfRange)
	errParamListLength = checkCondition(KeyIllegalRequest, ASCParameterListLengthError)
	errConflict        = &Error{Status: StatusReservationConflict}
	errReadFailed      = checkCondition(KeyMediumError, ASCUnrecoveredReadError)
	errWriteFailed     = checkCondition(KeyMediumError, ASCWriteError)
	errNoBackend       = checkCondition(KeyNotReady, ASCNotReadyManualIntervention)
	errInternal        = checkCondition(KeyHardwareError, ASCInternalTargetFailure)
	errWriteProtected  = checkCondition(KeyDataProtect, ASCSoftwareWriteProtected)
)

// ErrInvalidInfoUnit is the CHECK CONDITION a transport returns when the
// data it carried does not fit the command (e.g. a partial block).
var ErrInvalidInfoUnit = checkCondition(KeyIllegalRequest, ASCInvalidFieldInInfoUnit)

// ErrInvalidOpcode answers a CDB this device server does not implement
// (including CDBs longer than 16 bytes).
var ErrInvalidOpcode = errInvalidOpcode

// ErrDataPhase fails a command whose Data-Out sequence was broken (wrong
// DataSN or offset): ABORTED COMMAND, DATA PHASE ERROR.
var ErrDataPhase = checkCondition(KeyAbortedCommand, ASCDataPhaseError)

// ErrLUNotSupported answers any command to a LUN that does not exist.
var ErrLUNotSupported = checkCondition(KeyIllegalRequest, ASCLUNotSupported)

// FixedLen is the length of fixed-format sense data built by AppendFixed.
const FixedLen = 18

// AppendFixed appends fixed-format sense data (response code 70h, SPC-5
// 4.4.3) to dst.
func (s *Sense) AppendFixed(dst []byte) []byte {
	var b [FixedLen]byte
	b[0] = 0x70
	b[2] = s.Key & 0x0f
	if s.HasInfo {
		b[0] |= 0x80
		binary.BigEndian.PutUint32(b[3:7], uint32(s.Info))
	}
	b[7] = FixedLen - 8
	b[12] = byte(s.ASC >> 8)
	b[13] = byte(s.ASC)
	if s.FieldValid {
		b[15] = 0x80
		if s.FieldInCDB {
			b[15] |= 0x40
		}
		if s.FieldBitValid {
			b[15] |= 0x08 | (s.FieldBit & 7)
		}
		binary.BigEndian.PutUint16(b[16:18], s.FieldByte)
	}
	return append(dst, b[:]...)
}

// AppendDescriptor appends descriptor-format sense data (response code 72h,
// SPC-5 4.4.2) with an information descriptor and a sense-key specific
// descriptor when those fields are set.
func (s *Sense) AppendDescriptor(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, 0x72, s.Key&0x0f, byte(s.ASC>>8), byte(s.ASC), 0, 0, 0, 0)
	if s.HasInfo {
		var d [12]byte
		d[0], d[1], d[2] = 0x00, 0x0a, 0x80
		binary.BigEndian.PutUint64(d[4:], s.Info)
		dst = append(dst, d[:]...)
	}
	if s.FieldValid {
		var d [8]byte
		d[0], d[1] = 0x02, 0x06
		d[4] = 0x80
		if s.FieldInCDB {
			d[4] |= 0x40
		}
		if s.FieldBitValid {
			d[4] |= 0x08 | (s.FieldBit & 7)
		}
		binary.BigEndian.PutUint16(d[5:7], s.FieldByte)
		dst = append(dst, d[:]...)
	}
	dst[start+7] = byte(len(dst) - start - 8)
	return dst
}
