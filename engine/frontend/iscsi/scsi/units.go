package scsi

// Unit is what the transport needs of a logical unit. *LU is the volume;
// Controller is the storage array controller at LUN 0 (as tgt presents
// one); Absent answers for LUNs that do not exist.
type Unit interface {
	Prepare(cdb []byte) (int, *Error)
	Execute(c *Command) (Result, *Error)
	AppendSense(dst []byte, s *Sense) []byte
	AddNexus(n *Nexus)
	NexusLost(n *Nexus)
	Reset()
}

// Controller is a storage array controller LU (peripheral device type
// 0Ch) that answers INQUIRY, TEST UNIT READY, REQUEST SENSE and REPORT LUNS.
type Controller struct {
	// LUNs is what REPORT LUNS lists.
	LUNs []uint16
}

const devTypeController = 0x0c

// Prepare: no command of the controller takes Data-Out.
func (c *Controller) Prepare(cdb []byte) (int, *Error) {
	switch cdb[0] {
	case opInquiry, opTestUnitReady, opRequestSense, opReportLuns:
		return 0, nil
	}
	return 0, errInvalidOpcode
}

// Execute runs one command on the controller LU.
func (c *Controller) Execute(cmd *Command) (Result, *Error) {
	cdb := cmd.CDB
	switch cdb[0] {
	case opInquiry:
		if cdb[1]&0x01 != 0 {
			if cdb[2] != 0x00 {
				return Result{}, errInvalidCDB(2, -1)
			}
			return dataIn([]byte{devTypeController, 0, 0, 1, 0x00}, allocLen16(cdb), cmd), nil
		}
		if cdb[2] != 0 {
			return Result{}, errInvalidCDB(2, -1)
		}
		return dataIn(standardInquiry(devTypeController), allocLen16(cdb), cmd), nil
	case opTestUnitReady:
		return Result{}, nil
	case opRequestSense:
		s := Sense{}
		return dataIn(s.AppendFixed(nil), int(cdb[4]), cmd), nil
	case opReportLuns:
		return ReportLUNs(cmd, c.LUNs)
	}
	return Result{}, errInvalidOpcode
}

// AppendSense appends fixed-format sense data.
func (c *Controller) AppendSense(dst []byte, s *Sense) []byte { return s.AppendFixed(dst) }

// AddNexus, NexusLost and Reset: the controller keeps no per-nexus state.
func (c *Controller) AddNexus(*Nexus)  {}
func (c *Controller) NexusLost(*Nexus) {}
func (c *Controller) Reset()           {}

// Absent answers commands addressed to a LUN that does not exist (SPC-5
// 6.7.2 peripheral qualifier 011b, SAM-5 5.9.5).
type Absent struct {
	LUNs []uint16
}

// Prepare: nothing takes Data-Out.
func (a *Absent) Prepare(cdb []byte) (int, *Error) { return 0, nil }

// Execute answers INQUIRY with "no logical unit", REPORT LUNS and REQUEST
// SENSE normally and everything else with LOGICAL UNIT NOT SUPPORTED.
func (a *Absent) Execute(cmd *Command) (Result, *Error) {
	cdb := cmd.CDB
	switch cdb[0] {
	case opInquiry:
		if cdb[1]&0x01 != 0 {
			return Result{}, ErrLUNotSupported
		}
		d := standardInquiry(0x1f)
		d[0] = 0x7f
		return dataIn(d, allocLen16(cdb), cmd), nil
	case opReportLuns:
		return ReportLUNs(cmd, a.LUNs)
	case opRequestSense:
		s := ErrLUNotSupported.Sense
		return dataIn(s.AppendFixed(nil), int(cdb[4]), cmd), nil
	}
	return Result{}, ErrLUNotSupported
}

// AppendSense appends fixed-format sense data.
func (a *Absent) AppendSense(dst []byte, s *Sense) []byte { return s.AppendFixed(dst) }

// AddNexus, NexusLost and Reset do nothing.
func (a *Absent) AddNexus(*Nexus)  {}
func (a *Absent) NexusLost(*Nexus) {}
func (a *Absent) Reset()           {}
