// Package scsi is the device server of the iSCSI target: it turns SCSI
// commands (CDBs, SPC-5 and SBC-4) into calls on a frontend.Backend and builds
// their status, sense and data. It knows nothing of iSCSI: the transport
// gives it a CDB, the I_T nexus and the Data-Out bytes, and sends back what
// Execute returns.
//
// The device is a thin-provisioned direct-access block device with 512-byte
// logical blocks, 4096-byte physical blocks, a volatile write cache (flushed
// on SYNCHRONIZE CACHE and FUA only), UNMAP, WRITE SAME, COMPARE AND WRITE and
// persistent reservations.
package scsi

import (
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/frontend"
)

// BlockSize is the logical block size presented to initiators, in bytes.
const BlockSize = 512

// Limits advertised in the Block Limits VPD page (SBC-4 6.6.4), in logical blocks.
const (
	MaxTransferBlocks   = 16384 // 8 MiB per READ/WRITE
	OptimalXferBlocks   = 2048  // 1 MiB
	MaxCompareAndWrite  = 255   // blocks per COMPARE AND WRITE
	MaxUnmapBlocks      = 1 << 20
	MaxUnmapDescriptors = 256
	MaxWriteSameBlocks  = 65535
	physBlockExponent   = 3 // 2^3 logical blocks per 4096-byte physical block
	unmapGranularity    = 1 << physBlockExponent
)

// Config describes the logical unit.
type Config struct {
	// Name is the volume name; serial number and identifiers derive from it.
	Name string
	// Size is the capacity in bytes; it is rounded down to whole blocks.
	Size int64
	// TargetName is the iSCSI target name, used in the device
	// identification VPD page.
	TargetName string
	// RelativePortID is the relative target port identifier (usually 1).
	RelativePortID uint16
	// LUNs is what REPORT LUNS lists (every LUN of the target).
	LUNs []uint16
}

// Nexus identifies an I_T nexus: the iSCSI initiator port name
// ("<initiator-name>,i,0x<isid>", RFC 7143 4.2.7.1) which is stable across
// session reinstatement, as the key for unit attentions and reservations.
type Nexus struct {
	// Port is the initiator port name.
	Port string
	// InitiatorName is the iSCSI initiator name alone (for TransportIDs).
	InitiatorName string
	// ISID is the 6-byte session identifier as 12 hex digits.
	ISID string
}

// Command is one SCSI command for Execute.
type Command struct {
	CDB   []byte
	Nexus *Nexus
	// Data holds the Data-Out bytes received; it may be shorter than the CDB
	// asks for when the initiator's expected transfer length was smaller.
	Data []byte
	// AllocIn is the most Data-In bytes the transport can return (the
	// iSCSI expected data transfer length for reads, 0 for no data-in).
	AllocIn int
	// ExpectedOut is the Data-Out length the initiator announced (iSCSI
	// expected data transfer length of a write, else 0). Commands whose
	// Data-Out size is fixed by the CDB (COMPARE AND WRITE, WRITE SAME)
	// fail when it differs.
	ExpectedOut int
}

// Result is what a command returns besides its status.
type Result struct {
	// Data is the Data-In (at most Command.AllocIn bytes). When Pooled it
	// came from bufpool and the transport returns it with bufpool.Put.
	Data   []byte
	Pooled bool
	// XferLen is the number of bytes the CDB asked to transfer (in or out);
	// the transport derives the iSCSI residual from it.
	XferLen int
}

// LU is one logical unit: a direct-access block device over a Backend. It is
// safe for concurrent use; data commands run in parallel.
type LU struct {
	cfg     Config
	be      frontend.Backend
	blocks  atomic.Uint64
	serial  string
	naa     [16]byte
	locks   rangeLocks
	opTable *[256]*opInfo

	// fast-path flags, read without mu
	slowPath atomic.Int32 // >0 when UAs or reservations need checking
	wce      atomic.Bool
	swp      atomic.Bool
	dsense   atomic.Bool

	mu      sync.Mutex
	ua      map[string][]ASC
	nexuses map[string]bool
	prevent map[string]bool
	res2    string // SPC-2 RESERVE holder port, "" when none
	pr      prState
}

// ErrNoLU is returned by NewLU for a configuration it cannot serve.
var ErrNoLU = errors.New("scsi: invalid logical unit configuration")

// NewLU returns a logical unit of cfg.Size bytes over be. The write cache is
// enabled (WCE=1).
func NewLU(cfg Config, be frontend.Backend) (*LU, error) {
	if cfg.Size < BlockSize || be == nil {
		return nil, ErrNoLU
	}
	lu := &LU{cfg: cfg, be: be, ua: map[string][]ASC{}, nexuses: map[string]bool{}, prevent: map[string]bool{}}
	lu.blocks.Store(uint64(cfg.Size / BlockSize))
	lu.wce.Store(true)
	lu.opTable = &opTable
	h := fnv.New64a()
	h.Write([]byte(cfg.Name))
	sum := h.Sum64()
	lu.serial = serialFrom(sum)
	lu.naa = naaFrom(sum, cfg.Name)
	lu.pr.init()
	return lu, nil
}

// Blocks returns the capacity in logical blocks.
func (lu *LU) Blocks() uint64 { return lu.blocks.Load() }

// SetSize changes the capacity (bytes) and raises CAPACITY DATA HAS CHANGED
// on every known nexus.
func (lu *LU) SetSize(size int64) {
	lu.blocks.Store(uint64(size / BlockSize))
	lu.mu.Lock()
	defer lu.mu.Unlock()
	for port := range lu.nexuses {
		lu.addUALocked(port, ASCCapacityDataChanged)
	}
}

// AddNexus records a new I_T nexus (a session logged in).
func (lu *LU) AddNexus(n *Nexus) {
	lu.mu.Lock()
	defer lu.mu.Unlock()
	lu.nexuses[n.Port] = true
}

// NexusLost handles the loss of an I_T nexus (logout, connection failure or
// session reinstatement): it releases its SPC-2 reservation and its medium
// removal prevention. Persistent reservations survive (SPC-5 5.14.11).
func (lu *LU) NexusLost(n *Nexus) {
	lu.mu.Lock()
	defer lu.mu.Unlock()
	if lu.res2 == n.Port {
		lu.res2 = ""
	}
	delete(lu.prevent, n.Port)
	delete(lu.nexuses, n.Port)
	delete(lu.ua, n.Port)
	lu.updateSlowLocked()
}

// Reset performs a logical unit reset (LOGICAL UNIT RESET or TARGET WARM/COLD
// RESET task management, SAM-5 6.3): it releases SPC-2 reservations and
// medium removal prevention, restores default mode pages and raises a BUS DEVICE
// RESET FUNCTION OCCURRED unit attention on every nexus. The transport aborts
// the outstanding tasks itself.
func (lu *LU) Reset() {
	lu.mu.Lock()
	defer lu.mu.Unlock()
	lu.res2 = ""
	clear(lu.prevent)
	lu.wce.Store(true)
	lu.dsense.Store(false)
	lu.swp.Store(false)
	for port := range lu.nexuses {
		lu.ua[port] = []ASC{ASCBusDeviceReset}
	}
	lu.updateSlowLocked()
}

// addUALocked queues a unit attention for port (deduplicated).
func (lu *LU) addUALocked(port string, asc ASC) {
	for _, a := range lu.ua[port] {
		if a == asc {
			return
		}
	}
	lu.ua[port] = append(lu.ua[port], asc)
	lu.updateSlowLocked()
}

// popUALocked removes and returns the oldest unit attention of port.
func (lu *LU) popUALocked(port string) (ASC, bool) {
	q := lu.ua[port]
	if len(q) == 0 {
		return 0, false
	}
	a := q[0]
	if len(q) == 1 {
		delete(lu.ua, port)
	} else {
		lu.ua[port] = q[1:]
	}
	lu.updateSlowLocked()
	return a, true
}

func (lu *LU) updateSlowLocked() {
	n := int32(0)
	if len(lu.ua) > 0 || lu.res2 != "" || lu.pr.active() {
		n = 1
	}
	lu.slowPath.Store(n)
}

// Prepare decodes cdb far enough to tell how many Data-Out bytes the command
// consumes, so the transport knows how much to solicit before Execute. An
// error means the command fails without data transfer: the transport sends
// the error (after draining unsolicited data) and does not call Execute.
func (lu *LU) Prepare(cdb []byte) (int, *Error) {
	if len(cdb) == 0 {
		return 0, errInvalidOpcode
	}
	op := lu.lookup(cdb)
	if op == nil {
		return 0, errInvalidOpcode
	}
	if op.outLen == nil {
		return 0, nil
	}
	return op.outLen(lu, cdb)
}

// Execute runs one command. On failure it returns an *Error (CHECK CONDITION
// with sense, or RESERVATION CONFLICT); res.XferLen is set either way.
func (lu *LU) Execute(c *Command) (res Result, err *Error) {
	if len(c.CDB) == 0 {
		return res, errInvalidOpcode
	}
	op := lu.lookup(c.CDB)
	if op == nil {
		return res, errInvalidOpcode
	}
	if len(c.CDB) < op.cdbLen {
		return res, errInvalidOpcode
	}
	if op.outLen != nil {
		n, e := op.outLen(lu, c.CDB)
		if e != nil {
			return res, e
		}
		res.XferLen = n
	}
	if lu.slowPath.Load() != 0 {
		if e := lu.gate(op, c); e != nil {
			return res, e
		}
	}
	r, e := op.run(lu, c)
	if r.XferLen == 0 {
		r.XferLen = res.XferLen
	}
	return r, e
}

// gate applies the checks that only matter when the unit has state: pending
// unit attentions and reservation conflicts (SPC-5 5.14, SAM-5 5.14).
func (lu *LU) gate(op *opInfo, c *Command) *Error {
	lu.mu.Lock()
	defer lu.mu.Unlock()
	if op.flags&flagNoUA == 0 {
		if asc, ok := lu.popUALocked(c.Nexus.Port); ok {
			return checkCondition(KeyUnitAttention, asc)
		}
	}
	if e := lu.conflictLocked(op, c); e != nil {
		return e
	}
	return nil
}

// AppendSense appends the sense data of e in the format the Control mode
// page selects (D_SENSE).
func (lu *LU) AppendSense(dst []byte, s *Sense) []byte {
	if lu.dsense.Load() {
		return s.AppendDescriptor(dst)
	}
	return s.AppendFixed(dst)
}

// backendError maps a Backend error to sense data.
func backendError(err error, write bool) *Error {
	switch {
	case errors.Is(err, frontend.ErrOutOfRange):
		return errLBAOutOfRange
	case errors.Is(err, frontend.ErrNoBackend):
		return errNoBackend
	case write:
		return errWriteFailed
	default:
		return errReadFailed
	}
}

// dataIn returns the Data-In of a command with an ALLOCATION LENGTH: the
// command transfers min(len(full), alloc) bytes (XferLen) of which the
// transport can carry c.AllocIn; the buffer is pooled.
func dataIn(full []byte, alloc int, c *Command) Result {
	x := min(len(full), alloc)
	n := min(x, c.AllocIn)
	b := bufpool.GetShared(n)
	copy(b, full)
	return Result{Data: b, Pooled: b != nil, XferLen: x}
}
