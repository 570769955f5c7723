package webhook

import (
	"context"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// engineFieldSupport and replicaFieldSupport are the field lists of a whole
// Engine or Replica spec (the shared InstanceSpec is inlined in JSON).
var (
	engineFieldSupport  = mergeFieldSupport(InstanceSpecSupport, EngineSpecSupport)
	replicaFieldSupport = mergeFieldSupport(InstanceSpecSupport, ReplicaSpecSupport)
)

func mergeFieldSupport(lists ...map[string]FieldSupport) map[string]FieldSupport {
	out := map[string]FieldSupport{}
	for _, l := range lists {
		for k, v := range l {
			out[k] = v
		}
	}
	return out
}

// validateInstanceSpec checks the part shared by engines and replicas.
func validateInstanceSpec(s *longhorn.InstanceSpec) error {
	if s.VolumeName == "" {
		return Invalid("spec.volumeName", "must be set")
	}
	if err := oneOf("spec.dataEngine", s.DataEngine, longhorn.DataEngineTypeV1, longhorn.DataEngineTypeV2); err != nil {
		return err
	}
	if err := oneOf("spec.desireState", s.DesireState, "", longhorn.InstanceStateRunning, longhorn.InstanceStateStopped,
		longhorn.InstanceStateSuspended); err != nil {
		return err
	}
	if s.VolumeSize < 0 {
		return Invalid("spec.volumeSize", "%d bytes must not be negative", s.VolumeSize)
	}
	return nil
}

// validateInstanceUpdate keeps the volume and data engine of an instance.
func validateInstanceUpdate(old, s *longhorn.InstanceSpec) error {
	if old.VolumeName != s.VolumeName {
		return Invalid("spec.volumeName", "is immutable (was %q, now %q)", old.VolumeName, s.VolumeName)
	}
	if old.DataEngine != "" && old.DataEngine != s.DataEngine {
		return Invalid("spec.dataEngine", "is immutable (was %q, now %q)", old.DataEngine, s.DataEngine)
	}
	return nil
}

// EngineKind is the admission registration for engines.
func EngineKind() Kind[*longhorn.Engine] {
	return Kind[*longhorn.Engine]{
		Resource:   "engines",
		New:        func() *longhorn.Engine { return &longhorn.Engine{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Validate: func(_ context.Context, req Request[*longhorn.Engine]) error {
			e := req.Object
			var old any
			if req.Old != nil {
				old = &req.Old.Spec
			}
			if err := refuseNotSupported(engineFieldSupport, "spec.", old, &e.Spec); err != nil {
				return err
			}
			if err := validateInstanceSpec(&e.Spec.InstanceSpec); err != nil {
				return err
			}
			if err := oneOf("spec.frontend", e.Spec.Frontend, longhorn.VolumeFrontendEmpty, longhorn.VolumeFrontendBlockDev,
				longhorn.VolumeFrontendISCSI, longhorn.VolumeFrontendNBD, longhorn.VolumeFrontendNvmf, longhorn.VolumeFrontendUblk); err != nil {
				return err
			}
			if err := validateAddressMap("spec.replicaAddressMap", e.Spec.ReplicaAddressMap); err != nil {
				return err
			}
			if req.Operation == admissionv1.Update {
				return validateInstanceUpdate(&req.Old.Spec.InstanceSpec, &e.Spec.InstanceSpec)
			}
			return nil
		},
	}
}

// validateAddressMap checks that every value is "host:port" with a port in
// 1-65535.
func validateAddressMap(field string, m map[string]string) error {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		host, port, err := net.SplitHostPort(m[n])
		p, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return Invalid(field+"["+n+"]", "%q must be host:port with a port in 1-65535", m[n])
		}
	}
	return nil
}

// ReplicaKind is the admission registration for replicas.
func ReplicaKind() Kind[*longhorn.Replica] {
	return Kind[*longhorn.Replica]{
		Resource:   "replicas",
		New:        func() *longhorn.Replica { return &longhorn.Replica{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Validate: func(_ context.Context, req Request[*longhorn.Replica]) error {
			r := req.Object
			var old any
			if req.Old != nil {
				old = &req.Old.Spec
			}
			if err := refuseNotSupported(replicaFieldSupport, "spec.", old, &r.Spec); err != nil {
				return err
			}
			if err := validateInstanceSpec(&r.Spec.InstanceSpec); err != nil {
				return err
			}
			if r.Spec.DiskPath != "" && (!filepath.IsAbs(r.Spec.DiskPath) || filepath.Clean(r.Spec.DiskPath) != r.Spec.DiskPath) {
				return Invalid("spec.diskPath", "%q must be an absolute, clean path", r.Spec.DiskPath)
			}
			if d := r.Spec.DataDirectoryName; d != "" && (strings.ContainsAny(d, "/\\") || d == "." || d == "..") {
				return Invalid("spec.dataDirectoryName", "%q must be a single path element", d)
			}
			if r.Spec.RebuildRetryCount < 0 {
				return Invalid("spec.rebuildRetryCount", "%d must not be negative", r.Spec.RebuildRetryCount)
			}
			if req.Operation == admissionv1.Update {
				return validateInstanceUpdate(&req.Old.Spec.InstanceSpec, &r.Spec.InstanceSpec)
			}
			return nil
		},
	}
}

// VolumeAttachmentKind is the admission registration for volume
// attachments: one object per volume with the volume's name, tickets keyed
// by their ID, known attacher types, a node per ticket.
func VolumeAttachmentKind() Kind[*longhorn.VolumeAttachment] {
	return Kind[*longhorn.VolumeAttachment]{
		Resource:   "volumeattachments",
		New:        func() *longhorn.VolumeAttachment { return &longhorn.VolumeAttachment{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Validate: func(_ context.Context, req Request[*longhorn.VolumeAttachment]) error {
			va := req.Object
			if va.Spec.Volume == "" || va.Spec.Volume != va.Name {
				return Invalid("spec.volume", "%q must name the volume and equal metadata.name %q", va.Spec.Volume, va.Name)
			}
			if req.Operation == admissionv1.Update && req.Old.Spec.Volume != va.Spec.Volume {
				return Invalid("spec.volume", "is immutable (was %q)", req.Old.Spec.Volume)
			}
			return validateTickets(va.Spec.AttachmentTickets)
		},
	}
}

func validateTickets(tickets map[string]*longhorn.AttachmentTicket) error {
	ids := make([]string, 0, len(tickets))
	for id := range tickets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t := tickets[id]
		field := "spec.attachmentTickets[" + id + "]"
		switch {
		case t == nil:
			return Invalid(field, "must not be null")
		case len(id) > 253:
			return Invalid(field, "ticket ID is %d characters, the limit is 253", len(id))
		case t.ID != id:
			return Invalid(field+".id", "%q must equal the map key", t.ID)
		case !knownAttacher(t.Type):
			return Invalid(field+".type", "unknown attacher type %q", t.Type)
		case t.NodeID == "":
			return Invalid(field+".nodeID", "must be set")
		case t.Generation < 0:
			return Invalid(field+".generation", "%d must not be negative", t.Generation)
		}
		if v, ok := t.Parameters[longhorn.AttachmentParameterDisableFrontend]; ok {
			if err := oneOf(field+".parameters.disableFrontend", v, longhorn.TrueValue, longhorn.FalseValue, longhorn.AnyValue); err != nil {
				return err
			}
		}
	}
	return nil
}

// knownAttacher reports whether t is one of Longhorn's attacher types.
func knownAttacher(t longhorn.AttacherType) bool {
	return t == longhorn.AttacherTypeRecurringJobApp || longhorn.GetAttacherPriorityLevel(t) > 0
}
