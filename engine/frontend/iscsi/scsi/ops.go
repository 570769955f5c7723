package scsi

// Operation codes (SPC-5 table E.2, SBC-4 table 20).
const (
	opTestUnitReady     = 0x00
	opRequestSense      = 0x03
	opRead6             = 0x08
	opWrite6            = 0x0a
	opInquiry           = 0x12
	opModeSelect6       = 0x15
	opReserve6          = 0x16
	opRelease6          = 0x17
	opModeSense6        = 0x1a
	opStartStopUnit     = 0x1b
	opPreventAllow      = 0x1e
	opReadCapacity10    = 0x25
	opRead10            = 0x28
	opWrite10           = 0x2a
	opWriteVerify10     = 0x2e
	opVerify10          = 0x2f
	opPrefetch10        = 0x34
	opSyncCache10       = 0x35
	opWriteSame10       = 0x41
	opUnmap             = 0x42
	opModeSelect10      = 0x55
	opReserve10         = 0x56
	opRelease10         = 0x57
	opModeSense10       = 0x5a
	opPRIn              = 0x5e
	opPROut             = 0x5f
	opRead16            = 0x88
	opCompareAndWrite   = 0x89
	opWrite16           = 0x8a
	opWriteVerify16     = 0x8e
	opVerify16          = 0x8f
	opPrefetch16        = 0x90
	opSyncCache16       = 0x91
	opWriteSame16       = 0x93
	opServiceActionIn16 = 0x9e
	opReportLuns        = 0xa0
	opMaintenanceIn     = 0xa3
	opRead12            = 0xa8
	opWrite12           = 0xaa
	opWriteVerify12     = 0xae
	opVerify12          = 0xaf

	saReadCapacity16  = 0x10
	saGetLBAStatus    = 0x12
	saReportOpcodes   = 0x0c
	saReportTMFs      = 0x0d
	maxServiceActions = 32
)

// IsReadWrite reports whether cdb is a READ or WRITE (6, 10, 12 or 16;
// SBC-4 5.13-5.16, 5.35-5.38): a plain data transfer to or from the medium.
func IsReadWrite(cdb []byte) bool {
	if len(cdb) == 0 {
		return false
	}
	switch cdb[0] {
	case opRead6, opRead10, opRead12, opRead16, opWrite6, opWrite10, opWrite12, opWrite16:
		return true
	}
	return false
}

// op flags
const (
	flagNoUA       = 1 << iota // not failed by a pending unit attention
	flagMedium                 // needs a started unit (NOT READY when stopped)
	flagRead                   // reads the medium: conflicts with exclusive-access reservations
	flagWrite                  // modifies the medium or state: conflicts with every reservation type
	flagPRExempt               // never a reservation conflict
	flagRes2Exempt             // allowed while another nexus holds an SPC-2 reservation
)

type opInfo struct {
	name   string
	code   byte
	sa     int // service action, -1 when none
	cdbLen int
	flags  int
	run    func(lu *LU, c *Command) (Result, *Error)
	outLen func(lu *LU, cdb []byte) (int, *Error)
	// usage is the CDB usage data of REPORT SUPPORTED OPERATION CODES
	// (SPC-5 6.35.3): the bits of each CDB byte the device server looks at.
	usage []byte
	// reportSAs lists the service actions of a command dispatched by
	// its own handler (PERSISTENT RESERVE IN/OUT), for reporting.
	reportSAs []int
}

// opTable is indexed by operation code; opcodes with service actions point
// at a dispatcher.
var opTable [256]*opInfo

// saTable holds the commands with service actions, by opcode.
var saTable = map[byte]*[maxServiceActions]*opInfo{}

// opList is every supported command, in the order REPORT SUPPORTED
// OPERATION CODES lists them.
var opList []*opInfo

func register(o *opInfo) {
	opList = append(opList, o)
	if o.sa < 0 {
		opTable[o.code] = o
		return
	}
	t := saTable[o.code]
	if t == nil {
		t = new([maxServiceActions]*opInfo)
		saTable[o.code] = t
	}
	t[o.sa] = o
}

// saCodes are the opcodes whose service action is in CDB byte 1 bits 4-0.
func (lu *LU) lookup(cdb []byte) *opInfo {
	if t := saTable[cdb[0]]; t != nil {
		if len(cdb) < 2 {
			return nil
		}
		return t[cdb[1]&0x1f]
	}
	return lu.opTable[cdb[0]]
}

const (
	rw = flagMedium | flagWrite
	rd = flagMedium | flagRead
)

// opDefs is every supported command with its CDB usage map.
var opDefs = []*opInfo{
	{name: "TEST UNIT READY", code: opTestUnitReady, cdbLen: 6, flags: flagPRExempt, run: (*LU).testUnitReady,
		usage: []byte{0x00, 0, 0, 0, 0, 0x07}},
	{name: "REQUEST SENSE", code: opRequestSense, cdbLen: 6, flags: flagNoUA | flagPRExempt | flagRes2Exempt, run: (*LU).requestSense,
		usage: []byte{0x03, 0x01, 0, 0, 0xff, 0x07}},
	{name: "READ(6)", code: opRead6, cdbLen: 6, flags: rd, run: (*LU).read,
		usage: []byte{0x08, 0x1f, 0xff, 0xff, 0xff, 0x07}},
	{name: "WRITE(6)", code: opWrite6, cdbLen: 6, flags: rw, run: (*LU).write, outLen: writeOutLen,
		usage: []byte{0x0a, 0x1f, 0xff, 0xff, 0xff, 0x07}},
	{name: "INQUIRY", code: opInquiry, cdbLen: 6, flags: flagNoUA | flagPRExempt | flagRes2Exempt, run: (*LU).inquiry,
		usage: []byte{0x12, 0x01, 0xff, 0xff, 0xff, 0x07}},
	{name: "MODE SELECT(6)", code: opModeSelect6, cdbLen: 6, flags: flagWrite, run: (*LU).modeSelect, outLen: modeSelectOutLen,
		usage: []byte{0x15, 0x11, 0, 0, 0xff, 0x07}},
	{name: "RESERVE(6)", code: opReserve6, cdbLen: 6, flags: flagPRExempt, run: (*LU).reserve,
		usage: []byte{0x16, 0, 0, 0, 0, 0x07}},
	{name: "RELEASE(6)", code: opRelease6, cdbLen: 6, flags: flagPRExempt | flagRes2Exempt, run: (*LU).release,
		usage: []byte{0x17, 0, 0, 0, 0, 0x07}},
	{name: "MODE SENSE(6)", code: opModeSense6, cdbLen: 6, flags: flagRead, run: (*LU).modeSense,
		usage: []byte{0x1a, 0x08, 0xff, 0xff, 0xff, 0x07}},
	{name: "START STOP UNIT", code: opStartStopUnit, cdbLen: 6, flags: flagWrite, run: (*LU).startStop,
		usage: []byte{0x1b, 0x01, 0, 0x0f, 0xf7, 0x07}},
	{name: "PREVENT ALLOW MEDIUM REMOVAL", code: opPreventAllow, cdbLen: 6, flags: flagWrite, run: (*LU).preventAllow,
		usage: []byte{0x1e, 0, 0, 0, 0x03, 0x07}},
	{name: "READ CAPACITY(10)", code: opReadCapacity10, cdbLen: 10, flags: flagPRExempt, run: (*LU).readCapacity10,
		usage: []byte{0x25, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x01, 0x07}},
	{name: "READ(10)", code: opRead10, cdbLen: 10, flags: rd, run: (*LU).read,
		usage: []byte{0x28, 0xfe, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "WRITE(10)", code: opWrite10, cdbLen: 10, flags: rw, run: (*LU).write, outLen: writeOutLen,
		usage: []byte{0x2a, 0xfa, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "WRITE AND VERIFY(10)", code: opWriteVerify10, cdbLen: 10, flags: rw, run: (*LU).writeVerify, outLen: writeOutLen,
		usage: []byte{0x2e, 0xf6, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "VERIFY(10)", code: opVerify10, cdbLen: 10, flags: rd, run: (*LU).verify, outLen: verifyOutLen,
		usage: []byte{0x2f, 0xf6, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "PRE-FETCH(10)", code: opPrefetch10, cdbLen: 10, flags: rd, run: (*LU).prefetch,
		usage: []byte{0x34, 0x02, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "SYNCHRONIZE CACHE(10)", code: opSyncCache10, cdbLen: 10, flags: rw, run: (*LU).syncCache,
		usage: []byte{0x35, 0x02, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "WRITE SAME(10)", code: opWriteSame10, cdbLen: 10, flags: rw, run: (*LU).writeSame, outLen: writeSameOutLen,
		usage: []byte{0x41, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x07}},
	{name: "UNMAP", code: opUnmap, cdbLen: 10, flags: rw, run: (*LU).unmap, outLen: unmapOutLen,
		usage: []byte{0x42, 0x01, 0, 0, 0, 0, 0x1f, 0xff, 0xff, 0x07}},
	{name: "MODE SELECT(10)", code: opModeSelect10, cdbLen: 10, flags: flagWrite, run: (*LU).modeSelect, outLen: modeSelectOutLen,
		usage: []byte{0x55, 0x11, 0, 0, 0, 0, 0, 0xff, 0xff, 0x07}},
	{name: "RESERVE(10)", code: opReserve10, cdbLen: 10, flags: flagPRExempt, run: (*LU).reserve,
		usage: []byte{0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0x07}},
	{name: "RELEASE(10)", code: opRelease10, cdbLen: 10, flags: flagPRExempt | flagRes2Exempt, run: (*LU).release,
		usage: []byte{0x57, 0, 0, 0, 0, 0, 0, 0, 0, 0x07}},
	{name: "MODE SENSE(10)", code: opModeSense10, cdbLen: 10, flags: flagRead, run: (*LU).modeSense,
		usage: []byte{0x5a, 0x18, 0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0x07}},
	{name: "READ(16)", code: opRead16, cdbLen: 16, flags: rd, run: (*LU).read,
		usage: []byte{0x88, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "COMPARE AND WRITE", code: opCompareAndWrite, cdbLen: 16, flags: rw, run: (*LU).compareAndWrite, outLen: cawOutLen,
		usage: []byte{0x89, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0x1f, 0x07}},
	{name: "WRITE(16)", code: opWrite16, cdbLen: 16, flags: rw, run: (*LU).write, outLen: writeOutLen,
		usage: []byte{0x8a, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "WRITE AND VERIFY(16)", code: opWriteVerify16, cdbLen: 16, flags: rw, run: (*LU).writeVerify, outLen: writeOutLen,
		usage: []byte{0x8e, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "VERIFY(16)", code: opVerify16, cdbLen: 16, flags: rd, run: (*LU).verify, outLen: verifyOutLen,
		usage: []byte{0x8f, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "PRE-FETCH(16)", code: opPrefetch16, cdbLen: 16, flags: rd, run: (*LU).prefetch,
		usage: []byte{0x90, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "SYNCHRONIZE CACHE(16)", code: opSyncCache16, cdbLen: 16, flags: rw, run: (*LU).syncCache,
		usage: []byte{0x91, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "WRITE SAME(16)", code: opWriteSame16, cdbLen: 16, flags: rw, run: (*LU).writeSame, outLen: writeSameOutLen,
		usage: []byte{0x93, 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "READ CAPACITY(16)", code: opServiceActionIn16, sa: saReadCapacity16, cdbLen: 16, flags: flagPRExempt, run: (*LU).readCapacity16,
		usage: []byte{0x9e, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x07}},
	{name: "GET LBA STATUS", code: opServiceActionIn16, sa: saGetLBAStatus, cdbLen: 16, flags: rd, run: (*LU).getLBAStatus,
		usage: []byte{0x9e, 0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0x07}},
	{name: "REPORT LUNS", code: opReportLuns, cdbLen: 12, flags: flagNoUA | flagPRExempt | flagRes2Exempt, run: (*LU).reportLunsSelf,
		usage: []byte{0xa0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0x07}},
	{name: "REPORT SUPPORTED OPERATION CODES", code: opMaintenanceIn, sa: saReportOpcodes, cdbLen: 12, flags: flagPRExempt | flagRes2Exempt, run: (*LU).reportOpcodes,
		usage: []byte{0xa3, 0x0c, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0x07}},
	{name: "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS", code: opMaintenanceIn, sa: saReportTMFs, cdbLen: 12, flags: flagPRExempt | flagRes2Exempt, run: (*LU).reportTMFs,
		usage: []byte{0xa3, 0x0d, 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0x07}},
	{name: "READ(12)", code: opRead12, cdbLen: 12, flags: rd, run: (*LU).read,
		usage: []byte{0xa8, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "WRITE(12)", code: opWrite12, cdbLen: 12, flags: rw, run: (*LU).write, outLen: writeOutLen,
		usage: []byte{0xaa, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "WRITE AND VERIFY(12)", code: opWriteVerify12, cdbLen: 12, flags: rw, run: (*LU).writeVerify, outLen: writeOutLen,
		usage: []byte{0xae, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "VERIFY(12)", code: opVerify12, cdbLen: 12, flags: rd, run: (*LU).verify, outLen: verifyOutLen,
		usage: []byte{0xaf, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x07}},
	{name: "PERSISTENT RESERVE IN", code: opPRIn, sa: -2, cdbLen: 10, flags: flagPRExempt, run: (*LU).prIn, reportSAs: []int{0, 1, 2, 3},
		usage: []byte{0x5e, 0x1f, 0, 0, 0, 0, 0, 0xff, 0xff, 0x07}},
	{name: "PERSISTENT RESERVE OUT", code: opPROut, sa: -2, cdbLen: 10, flags: flagPRExempt, run: (*LU).prOut, outLen: prOutLen, reportSAs: []int{0, 1, 2, 3, 4, 5, 6},
		usage: []byte{0x5f, 0x1f, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x07}},
}

func init() {
	for _, o := range opDefs {
		if o.sa == 0 && o.code != opServiceActionIn16 && o.code != opMaintenanceIn {
			o.sa = -1
		}
		if o.sa == -2 { // PR IN/OUT: service action decoded by the handler
			o.sa = -1
		}
		register(o)
	}
}
