package webhook

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// groupRegexp is the pattern of recurring job group names (they become
// label name parts).
var groupRegexp = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// diskNameRegexp: disk keys are used in paths and label values.
var diskNameRegexp = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// NodeKind is the admission registration for Longhorn nodes. Mutation sorts
// and de-duplicates tags (node and disk), as Longhorn does; validation checks
// tags, disk specs and disk removal.
func NodeKind() Kind[*longhorn.Node] {
	return Kind[*longhorn.Node]{
		Resource:   "nodes",
		New:        func() *longhorn.Node { return &longhorn.Node{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Mutate: func(_ context.Context, req Request[*longhorn.Node]) ([]PatchOp, error) {
			return mutateNode(req.Object), nil
		},
		Validate: func(_ context.Context, req Request[*longhorn.Node]) error {
			if err := refuseNotSupportedNode(req.Old, req.Object); err != nil {
				return err
			}
			if err := validateNodeSpec(req.Object); err != nil {
				return err
			}
			if req.Operation == admissionv1.Update && req.Object.DeletionTimestamp == nil {
				return validateDiskRemoval(req.Old, req.Object)
			}
			return nil
		},
	}
}

// refuseNotSupportedNode applies NodeSpecSupport and DiskSpecSupport; old
// is nil on create.
func refuseNotSupportedNode(old, n *longhorn.Node) error {
	var oldSpec any
	var oldDisks map[string]longhorn.DiskSpec
	if old != nil {
		oldSpec, oldDisks = &old.Spec, old.Spec.Disks
	}
	if err := refuseNotSupported(NodeSpecSupport, "spec.", oldSpec, &n.Spec); err != nil {
		return err
	}
	return refuseNotSupportedDisks(oldDisks, n.Spec.Disks)
}

// normalizeTags sorts and removes duplicates; nil becomes empty.
func normalizeTags(tags []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tags {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

func mutateNode(n *longhorn.Node) []PatchOp {
	var ops []PatchOp
	if t := normalizeTags(n.Spec.Tags); !slices.Equal(t, n.Spec.Tags) {
		ops = append(ops, PatchOp{Op: "add", Path: "/spec/tags", Value: t})
	}
	names := make([]string, 0, len(n.Spec.Disks))
	for name := range n.Spec.Disks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := n.Spec.Disks[name]
		base := "/spec/disks/" + jsonPointerEscape(name)
		if t := normalizeTags(d.Tags); !slices.Equal(t, d.Tags) {
			ops = append(ops, PatchOp{Op: "add", Path: base + "/tags", Value: t})
		}
		if d.Type == "" {
			ops = append(ops, PatchOp{Op: "add", Path: base + "/diskType", Value: longhorn.DiskTypeFilesystem})
		}
	}
	return ops
}

// jsonPointerEscape escapes a key for a JSON Pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// validateTags accepts Kubernetes qualified names ("fast", "example.com/ssd"),
// as Longhorn's util.ValidateTags does.
func validateTags(field string, tags []string) error {
	for i, t := range tags {
		if errs := validation.IsQualifiedName(t); len(errs) > 0 {
			return Invalid(fmt.Sprintf("%s[%d]", field, i), "tag %q is not a qualified name: %s", t, strings.Join(errs, "; "))
		}
	}
	return nil
}

// validateNodeSpec: tags, CPU request, and per disk: name, type, an
// absolute clean path used by no other disk, a non-negative reservation.
func validateNodeSpec(n *longhorn.Node) error {
	if err := validateTags("spec.tags", n.Spec.Tags); err != nil {
		return err
	}
	if n.Spec.InstanceManagerCPURequest < 0 {
		return Invalid("spec.instanceManagerCPURequest", "%d millicpu must not be negative", n.Spec.InstanceManagerCPURequest)
	}
	paths := map[string]string{}
	names := make([]string, 0, len(n.Spec.Disks))
	for name := range n.Spec.Disks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := n.Spec.Disks[name]
		field := "spec.disks[" + name + "]"
		if !diskNameRegexp.MatchString(name) {
			return Invalid(field, "disk name %q must be 1-63 letters, digits, '_', '.' or '-'", name)
		}
		if err := oneOf(field+".diskType", d.Type, longhorn.DiskTypeFilesystem, longhorn.DiskTypeBlock); err != nil {
			return err
		}
		if d.Path == "" || !filepath.IsAbs(d.Path) || filepath.Clean(d.Path) != d.Path {
			return Invalid(field+".path", "%q must be an absolute, clean path", d.Path)
		}
		if other, dup := paths[d.Path]; dup {
			return Invalid(field+".path", "%q is already used by disk %s", d.Path, other)
		}
		paths[d.Path] = name
		if d.StorageReserved < 0 {
			return Invalid(field+".storageReserved", "%d bytes must not be negative", d.StorageReserved)
		}
		if err := validateTags(field+".tags", d.Tags); err != nil {
			return err
		}
	}
	return nil
}

// validateDiskRemoval refuses to drop a disk that still allows scheduling or
// still holds replicas, with Longhorn's message (webhook node validator),
// which Longhorn's tests and UI match.
func validateDiskRemoval(old, n *longhorn.Node) error {
	for name, d := range old.Spec.Disks {
		if _, kept := n.Spec.Disks[name]; kept {
			continue
		}
		st := old.Status.DiskStatus[name]
		if d.AllowScheduling || (st != nil && (len(st.ScheduledReplica) > 0 || st.StorageScheduled != 0)) {
			return Invalid("spec.disks["+name+"]", "%s", types.DiskRemovalRefused(old.Name, d.Path))
		}
	}
	return nil
}
