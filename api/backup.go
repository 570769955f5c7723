package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Backup collections (Longhorn api/router.go and api/backup.go):
// backuptargets with create, sync-all (PUT), delete and the actions
// backupTargetSync and backupTargetUpdate; backupvolumes (backupvolume.go)
// and the backups of every volume; the volume action snapshotBackup. The
// API writes the BackupTarget, BackupVolume and Backup objects; the backup
// controllers (controller/backup_*.go) act on them.
func (s *Server) backupRoutes() {
	h := s.handle
	m := s.mux
	m.HandleFunc("GET /v1/backuptargets", h(s.listBackupTargets))
	m.HandleFunc("GET /v1/backuptargets/{name}", h(s.getBackupTarget))
	m.HandleFunc("POST /v1/backuptargets", h(s.createBackupTarget))
	m.HandleFunc("PUT /v1/backuptargets", h(s.syncAllBackupTargets))
	m.HandleFunc("DELETE /v1/backuptargets/{name}", h(s.deleteBackupTarget))
	m.HandleFunc("POST /v1/backuptargets/{name}", h(s.backupTargetAction))

	m.HandleFunc("GET /v1/backupvolumes", h(s.listBackupVolumes))
	m.HandleFunc("GET /v1/backupvolumes/{name}", h(s.getBackupVolume))
	m.HandleFunc("PUT /v1/backupvolumes", h(s.syncAllBackupVolumes))
	m.HandleFunc("DELETE /v1/backupvolumes/{name}", h(s.deleteBackupVolume))
	m.HandleFunc("POST /v1/backupvolumes/{name}", h(s.backupVolumeAction))
	m.HandleFunc("GET /v1/backups", h(s.listBackups))
}

// refuse returns a handler that answers 501 for a missing feature.
func refuse(what string) handlerFunc {
	return func(context.Context, *http.Request, urls) (int, any, error) { return 0, nil, notSupported(what) }
}

// emptyCollection answers the (empty) collection of a feature that cannot
// have objects yet.
func emptyCollection(typ, coll string) handlerFunc {
	return func(_ context.Context, _ *http.Request, u urls) (int, any, error) {
		return http.StatusOK, u.newCollection(typ, coll, nil), nil
	}
}

// missingObject answers 404 for an object of a feature that cannot have
// objects yet, saying why.
func missingObject(kind, what string) handlerFunc {
	return func(_ context.Context, r *http.Request, _ urls) (int, any, error) {
		return 0, nil, newError(http.StatusNotFound, CodeNotFound, "%s %q not found: %s is not supported yet", kind, r.PathValue("name"), what)
	}
}

// Backup object label keys (longhorn.io/backup-volume, longhorn.io/backup-target).
var (
	labelBackupVolume = types.LonghornLabelKeyPrefix + "/" + types.LonghornLabelBackupVolume
	labelBackupTarget = types.LonghornLabelKeyPrefix + "/" + types.LonghornLabelBackupTarget
)

// Backup target actions (Longhorn's router).
const (
	ActionBackupTargetSync   = "backupTargetSync"
	ActionBackupTargetUpdate = "backupTargetUpdate"
)

// BackupTarget is a backup target resource (Longhorn's engineapi
// BackupTarget fields). pollInterval is shown as a Go duration ("5m0s")
// and taken as whole seconds ("300"), as Longhorn does; a Go duration is
// accepted too.
type BackupTarget struct {
	Resource
	Name             string `json:"name"`
	BackupTargetURL  string `json:"backupTargetURL"`
	CredentialSecret string `json:"credentialSecret"`
	PollInterval     string `json:"pollInterval"`
	Available        bool   `json:"available"`
	Message          string `json:"message"`
}

// SyncBackupResource is the body of the backup sync calls (Longhorn's
// SyncBackupResource): PUT /v1/backuptargets takes syncAllBackupTargets,
// backupTargetSync syncBackupTarget, PUT /v1/backupvolumes
// syncAllBackupVolumes and backupVolumeSync syncBackupVolume.
type SyncBackupResource struct {
	SyncAllBackupTargets bool `json:"syncAllBackupTargets"`
	SyncBackupTarget     bool `json:"syncBackupTarget"`
	SyncAllBackupVolumes bool `json:"syncAllBackupVolumes"`
	SyncBackupVolume     bool `json:"syncBackupVolume"`
}

func (u urls) backupTarget(bt *longhorn.BackupTarget) BackupTarget {
	return BackupTarget{Resource: u.newResource("backupTarget", "backuptargets", bt.Name, ActionBackupTargetSync, ActionBackupTargetUpdate),
		Name: bt.Name, BackupTargetURL: bt.Spec.BackupTargetURL, CredentialSecret: bt.Spec.CredentialSecret,
		PollInterval: bt.Spec.PollInterval.Duration.String(), Available: bt.Status.Available,
		Message: conditionMap(bt.Status.Conditions)[longhorn.BackupTargetConditionTypeUnavailable].Message}
}

func (s *Server) listBackupTargets(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListBackupTargetsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("backupTarget", "backuptargets", toResources(objs, u.backupTarget)), nil
}

func (s *Server) getBackupTarget(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	bt, err := s.ds.GetBackupTargetRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupTarget(bt), nil
}

// supportedTargetSchemes are the backupstore URL schemes the engine opens.
var supportedTargetSchemes = []string{"s3", "nfs", "vfs"}

// ParseBackupTargetSpec validates a backup target input and returns its
// spec: backupTargetURL empty (not configured) or s3://, nfs://, vfs://
// (cifs:// and azblob:// answer 501); credentialSecret empty or a DNS-1123
// subdomain; pollInterval whole seconds >= 0 or a Go duration >= 0, ""
// meaning 300 s. Errors are 422 (501 for cifs/azblob) naming the field.
func ParseBackupTargetSpec(in BackupTarget) (longhorn.BackupTargetSpec, error) {
	spec := longhorn.BackupTargetSpec{BackupTargetURL: strings.TrimSpace(in.BackupTargetURL), CredentialSecret: in.CredentialSecret}
	if u := spec.BackupTargetURL; u != "" {
		scheme, _, ok := strings.Cut(u, "://")
		scheme = strings.ToLower(scheme)
		switch {
		case !ok || scheme == "":
			return spec, invalidInput("backupTargetURL", "%q has no scheme: want s3://bucket@region/path, nfs://server:/export or vfs:///dir", u)
		case scheme == "cifs" || scheme == "azblob":
			return spec, notSupported("the " + scheme + " backup target (supported: s3, nfs, vfs)")
		case !slices.Contains(supportedTargetSchemes, scheme):
			return spec, invalidInput("backupTargetURL", "scheme %q is not one of s3, nfs, vfs", scheme)
		}
	}
	if c := spec.CredentialSecret; c != "" {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return spec, invalidInput("credentialSecret", "%q is not a Secret name: %s", c, strings.Join(errs, "; "))
		}
	}
	d, err := parsePollInterval(in.PollInterval)
	if err != nil {
		return spec, err
	}
	spec.PollInterval = metav1.Duration{Duration: d}
	return spec, nil
}

// maxPollInterval bounds pollInterval (a year is more than anyone polls).
const maxPollInterval = 365 * 24 * time.Hour

func parsePollInterval(p string) (time.Duration, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return 300 * time.Second, nil
	}
	var d time.Duration
	if n, err := strconv.ParseInt(p, 10, 64); err == nil {
		if n < 0 || n > int64(maxPollInterval/time.Second) {
			return 0, invalidInput("pollInterval", "%d seconds is out of range [0, %d]", n, int64(maxPollInterval/time.Second))
		}
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(p); err != nil {
		return 0, invalidInput("pollInterval", "%q is neither whole seconds nor a duration like 5m0s", p)
	}
	if d < 0 || d > maxPollInterval {
		return 0, invalidInput("pollInterval", "%s is out of range [0s, %s]", d, maxPollInterval)
	}
	return d, nil
}

// createBackupTarget creates a BackupTarget; the backup target controller
// checks it and lists its backup volumes.
func (s *Server) createBackupTarget(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in BackupTarget
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if errs := validation.IsDNS1123Label(in.Name); len(errs) > 0 {
		return 0, nil, invalidInput("name", "%q is not a valid backup target name: %s", in.Name, strings.Join(errs, "; "))
	}
	spec, err := ParseBackupTargetSpec(in)
	if err != nil {
		return 0, nil, err
	}
	bt, err := s.ds.CreateBackupTarget(ctx, &longhorn.BackupTarget{ObjectMeta: metav1.ObjectMeta{Name: in.Name}, Spec: spec})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupTarget(bt), nil
}

// syncAllBackupTargets answers PUT /v1/backuptargets: with
// syncAllBackupTargets it asks every target to sync now; it returns the
// targets.
func (s *Server) syncAllBackupTargets(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in SyncBackupResource
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.SyncAllBackupTargets {
		objs, err := s.ds.ListBackupTargetsRO(ctx, nil)
		if err != nil {
			return 0, nil, err
		}
		for _, bt := range objs {
			if _, err := s.editBackupTarget(ctx, bt.Name, requestSync); err != nil {
				return 0, nil, err
			}
		}
	}
	return s.listBackupTargets(ctx, r, u)
}

// requestSync sets spec.syncRequestedAt to now (the controllers sync on
// every spec change).
func requestSync(spec *longhorn.BackupTargetSpec) { spec.SyncRequestedAt = metav1.NewTime(time.Now()) }

func (s *Server) editBackupTarget(ctx context.Context, name string, edit func(*longhorn.BackupTargetSpec)) (*longhorn.BackupTarget, error) {
	var out *longhorn.BackupTarget
	err := retry.RetryOnConflict(writeBackoff, func() error {
		bt, err := s.ds.GetBackupTarget(ctx, name)
		if err != nil {
			return err
		}
		edit(&bt.Spec)
		out, err = s.ds.UpdateBackupTarget(ctx, bt)
		return err
	})
	return out, err
}

func (s *Server) backupTargetAction(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	action := r.URL.Query().Get("action")
	name := r.PathValue("name")
	if action != ActionBackupTargetSync && action != ActionBackupTargetUpdate {
		return 0, nil, unknownAction("backup target", action, []string{ActionBackupTargetSync, ActionBackupTargetUpdate})
	}
	if _, err := s.ds.GetBackupTargetRO(ctx, name); err != nil {
		return 0, nil, err
	}
	if action == ActionBackupTargetSync {
		var in SyncBackupResource
		if err := decodeBody(r, &in); err != nil {
			return 0, nil, err
		}
		if !in.SyncBackupTarget {
			return s.getBackupTarget(ctx, r, u)
		}
		bt, err := s.editBackupTarget(ctx, name, requestSync)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, u.backupTarget(bt), nil
	}
	var in BackupTarget
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name != "" && in.Name != name {
		return 0, nil, invalidInput("name", "%q differs from the backup target %q in the path (a target cannot be renamed)", in.Name, name)
	}
	spec, err := ParseBackupTargetSpec(in)
	if err != nil {
		return 0, nil, err
	}
	bt, err := s.editBackupTarget(ctx, name, func(cur *longhorn.BackupTargetSpec) {
		cur.BackupTargetURL, cur.CredentialSecret, cur.PollInterval = spec.BackupTargetURL, spec.CredentialSecret, spec.PollInterval
		requestSync(cur)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupTarget(bt), nil
}

// deleteBackupTarget deletes a backup target other than the default one
// (Longhorn refuses to delete it) and a target no volume uses. Its backup
// volume objects are dropped without touching the store (the backups stay
// in the backupstore, as in Longhorn), which drops their Backup objects.
func (s *Server) deleteBackupTarget(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	name := r.PathValue("name")
	if name == longhorn.BackupTargetDefault {
		return 0, nil, invalidState("the default backup target cannot be deleted; set its URL empty to disable it")
	}
	if _, err := s.ds.GetBackupTargetRO(ctx, name); err != nil {
		return 0, nil, err
	}
	vols, err := s.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	for _, v := range vols {
		if v.Spec.BackupTargetName == name {
			return 0, nil, invalidState("backup target %s is used by volume %s (backupTargetName): change it first", name, v.Name)
		}
	}
	bvs, err := s.ds.ListBackupVolumesRO(ctx, labels.SelectorFromSet(labels.Set{labelBackupTarget: name}))
	if err != nil {
		return 0, nil, err
	}
	for _, bv := range bvs {
		if err := s.forgetBackupVolume(ctx, bv.Name); err != nil {
			return 0, nil, err
		}
	}
	if err := s.ds.DeleteBackupTarget(ctx, name); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// forgetBackupVolume deletes a BackupVolume object marked so that its
// deletion leaves the backupstore alone (types.AnnotationBackupstoreGone).
func (s *Server) forgetBackupVolume(ctx context.Context, name string) error {
	err := retry.RetryOnConflict(writeBackoff, func() error {
		bv, err := s.ds.GetBackupVolume(ctx, name)
		if err != nil {
			return err
		}
		if bv.Annotations == nil {
			bv.Annotations = map[string]string{}
		}
		bv.Annotations[types.AnnotationBackupstoreGone] = "true"
		_, err = s.ds.UpdateBackupVolume(ctx, bv)
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := s.ds.DeleteBackupVolume(ctx, name); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
