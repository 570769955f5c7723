package controller

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/meta"
	"github.com/longhorn-go/longhorn/types"
)

// EngineImageController keeps the EngineImage object of the manager's
// --engine-image (named ei-<checksum>, as Longhorn names it) and its status.
// This product ships the engine binary inside the instance-manager image,
// so an engine image is deployed on a node when an instance manager runs
// there (Longhorn deploys a DaemonSet per engine image instead); its
// reference count is the volumes, engines and replicas that use it
// (Longhorn's). An older image (left by an upgrade) is deployed where
// instance managers of that image still run, is incompatible outside this
// manager's CLI API range, and is deleted once nothing has used it for
// expiredEngineImageTimeout (Longhorn's automatic clean-up).
type EngineImageController struct {
	*env
	w *Worker
}

func newEngineImageController(e *env) (runner, error) {
	c := &EngineImageController{env: e}
	c.w = NewWorker("longhorn-engine-image", c.syncEngineImage)
	if err := addHandler(e.ds.EngineImageInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	// Node, instance manager, engine, replica and volume changes touch the
	// images' deployment maps and reference counts.
	all := onChange(func(any) { c.enqueueAll() })
	// Volume and setting changes may make a volume eligible for the
	// automatic upgrade to it (autoUpgrade).
	for _, inf := range []func() cache.SharedIndexInformer{e.ds.NodeInformer, e.ds.InstanceManagerInformer, e.ds.EngineInformer,
		e.ds.ReplicaInformer, e.ds.VolumeInformer, e.ds.SettingInformer} {
		if err := addHandler(inf(), all); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *EngineImageController) enqueueDefault() {
	if c.opts.EngineImage != "" {
		c.w.Enqueue(c.key(types.EngineImageName(c.opts.EngineImage)))
	}
}

// enqueueAll enqueues the default image and every EngineImage object (an
// older image's reference count falls as its volumes move away).
func (c *EngineImageController) enqueueAll() {
	c.enqueueDefault()
	eis, err := c.ds.ListEngineImagesRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, ei := range eis {
		c.w.Enqueue(c.key(ei.Name))
	}
}

func (c *EngineImageController) run(ctx context.Context, workers int) error {
	c.enqueueDefault()
	return c.w.Run(ctx, workers)
}

// syncEngineImage creates the default engine image if missing, then (on
// the responsible manager) writes the status decideEngineImageStatus gives.
func (c *EngineImageController) syncEngineImage(ctx context.Context, key string) (Result, error) {
	name := splitKey(key)
	eiRO, err := c.ds.GetEngineImageRO(ctx, name)
	if apierrors.IsNotFound(err) {
		if c.opts.EngineImage == "" || name != types.EngineImageName(c.opts.EngineImage) {
			return Done, nil
		}
		ei := &longhorn.EngineImage{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: longhorn.EngineImageSpec{Image: c.opts.EngineImage}}
		if _, err := c.ds.CreateEngineImage(ctx, ei); err != nil && !apierrors.IsAlreadyExists(err) {
			return Done, err
		}
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, "", eiRO.Status.OwnerID) {
		return Done, nil
	}
	if c.skipReconcile(eiRO, "EngineImage") {
		return Done, nil
	}
	obs, err := c.observeEngineImage(ctx, eiRO)
	if err != nil {
		return Done, err
	}
	st := decideEngineImageStatus(eiRO, obs, c.opts.NodeName, c.now())
	if err := c.autoUpgrade(ctx, eiRO); err != nil {
		return Done, fmt.Errorf("automatic engine upgrade: %w", err)
	}
	expired, wait := engineImageExpiry(st, obs.protected, c.now())
	if expired {
		LoggerFrom(ctx).WithField("engineImage", eiRO.Name).Infof("Deleting engine image %s (%s): unused since %s",
			eiRO.Name, eiRO.Spec.Image, st.NoRefSince)
		if err := c.ds.DeleteEngineImage(ctx, eiRO.Name); err != nil && !apierrors.IsNotFound(err) {
			return Done, fmt.Errorf("delete expired engine image %s: %w", eiRO.Name, err)
		}
		return Done, nil
	}
	res := Done
	if wait > 0 {
		res = After(wait)
	}
	if reflect.DeepEqual(st, eiRO.Status) {
		return res, nil
	}
	next := eiRO.DeepCopy()
	next.Status = st
	_, err = c.ds.UpdateEngineImageStatus(ctx, next)
	return res, err
}

// expiredEngineImageTimeout is how long an engine image other than the
// default may stay unused (refCount 0) before it is deleted (Longhorn's
// ExpiredEngineImageTimeout, not a setting there either).
const expiredEngineImageTimeout = 60 * time.Minute

// engineImageExpiry decides Longhorn's automatic clean-up of an engine
// image from its status: an image that is not protected (the default image:
// this manager's own or setting default-engine-image) and whose refCount
// has been 0 since noRefSince (RFC 3339) for expiredEngineImageTimeout or
// longer is expired; otherwise wait is how long until it would be (0 when
// it is in use, protected, or noRefSince is unset or unreadable).
func engineImageExpiry(st longhorn.EngineImageStatus, protected bool, now time.Time) (expired bool, wait time.Duration) {
	if protected || st.RefCount != 0 || st.NoRefSince == "" {
		return false, 0
	}
	since, err := time.Parse(time.RFC3339, st.NoRefSince)
	if err != nil {
		return false, 0
	}
	if left := since.Add(expiredEngineImageTimeout).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// engineImageObservation is what an engine image's status is computed from.
type engineImageObservation struct {
	nodes     []string        // Longhorn nodes that are not down
	deployed  map[string]bool // node -> an instance manager of the image runs there
	refCount  int             // volumes, engines and replicas using the image
	isDefault bool            // the manager's own --engine-image (this build's binary)
	// protected: the default image (isDefault, or setting
	// default-engine-image), never deleted automatically.
	protected bool
}

func (c *EngineImageController) observeEngineImage(ctx context.Context, ei *longhorn.EngineImage) (engineImageObservation, error) {
	obs := engineImageObservation{deployed: map[string]bool{}, isDefault: ei.Spec.Image == c.opts.EngineImage}
	nodes, err := c.ds.ListNodesRO(ctx, nil)
	if err != nil {
		return obs, err
	}
	for _, n := range nodes {
		if c.isNodeDown(ctx, n.Name) {
			continue
		}
		obs.nodes = append(obs.nodes, n.Name)
		ims, err := c.ds.ListInstanceManagersByNodeRO(ctx, n.Name)
		if err != nil {
			return obs, err
		}
		for _, im := range ims {
			// The default image's binary is in every instance manager of
			// this build; an older image (left by an upgrade) is deployed
			// where instance managers of that image still run.
			ofImage := obs.isDefault || im.Spec.Image == ei.Spec.Image
			obs.deployed[n.Name] = obs.deployed[n.Name] || (ofImage && im.Status.CurrentState == longhorn.InstanceManagerStateRunning)
		}
	}
	if obs.refCount, err = c.countImageUsers(ctx, ei.Spec.Image); err != nil {
		return obs, err
	}
	def, err := c.ds.GetSettingValue(ctx, types.SettingNameDefaultEngineImage)
	if err != nil {
		return obs, err
	}
	obs.protected = obs.isDefault || ei.Spec.Image == def
	sort.Strings(obs.nodes)
	return obs, nil
}

// countImageUsers counts the volumes, engines and replicas whose
// spec.image or status.currentImage is image (Longhorn's refCount).
func (c *EngineImageController) countImageUsers(ctx context.Context, image string) (int, error) {
	n := 0
	vols, err := c.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return 0, err
	}
	for _, v := range vols {
		if v.Spec.Image == image || v.Status.CurrentImage == image {
			n++
		}
	}
	engines, err := c.ds.ListEnginesRO(ctx, nil)
	if err != nil {
		return 0, err
	}
	for _, e := range engines {
		if e.Spec.Image == image || e.Status.CurrentImage == image {
			n++
		}
	}
	replicas, err := c.ds.ListReplicasRO(ctx, nil)
	if err != nil {
		return 0, err
	}
	for _, r := range replicas {
		if r.Spec.Image == image || r.Status.CurrentImage == image {
			n++
		}
	}
	return n, nil
}

// decideEngineImageStatus: deployed when an instance manager runs on every
// node that is up (deploying otherwise, with the ready condition saying
// where it is missing), incompatible when the image's CLI API version is
// outside the range this manager speaks; the version details of the
// default image are this build's, another image keeps those recorded by the
// manager that deployed it; noRefSince is kept while nothing uses the image
// and cleared when something does.
func decideEngineImageStatus(ei *longhorn.EngineImage, obs engineImageObservation, owner string, now time.Time) longhorn.EngineImageStatus {
	st := *ei.Status.DeepCopy()
	st.OwnerID = owner
	st.NodeDeploymentMap = map[string]bool{}
	var missing []string
	for _, n := range obs.nodes {
		st.NodeDeploymentMap[n] = obs.deployed[n]
		if !obs.deployed[n] {
			missing = append(missing, n)
		}
	}
	if obs.isDefault {
		st.EngineVersionDetails = longhorn.EngineVersionDetails{Version: meta.Version, GitCommit: meta.GitCommit, BuildDate: meta.BuildDate,
			CLIAPIVersion: engineapi.CurrentCLIAPIVersion, CLIAPIMinVersion: engineapi.MinCLIAPIVersion,
			ControllerAPIVersion: engineapi.CurrentControllerAPIVersion, ControllerAPIMinVersion: engineapi.MinControllerAPIVersion,
			DataFormatVersion: engineapi.CurrentDataFormatVersion, DataFormatMinVersion: engineapi.MinDataFormatVersion}
	}
	ts := now.UTC().Format(time.RFC3339)
	st.State = longhorn.EngineImageStateDeployed
	ready, reason, msg := longhorn.ConditionStatusTrue, "", ""
	v := st.CLIAPIVersion
	st.Incompatible = v < engineapi.MinCLIAPIVersion || v > engineapi.CurrentCLIAPIVersion
	switch {
	case st.Incompatible:
		st.State = longhorn.EngineImageStateIncompatible
		ready, reason, msg = longhorn.ConditionStatusFalse, longhorn.EngineImageConditionTypeReadyReasonBinary,
			fmt.Sprintf("CLI API version %d of image %s is outside the range %d-%d this manager supports",
				v, ei.Spec.Image, engineapi.MinCLIAPIVersion, engineapi.CurrentCLIAPIVersion)
	case len(missing) > 0 || len(obs.nodes) == 0:
		st.State = longhorn.EngineImageStateDeploying
		ready, reason, msg = longhorn.ConditionStatusFalse, longhorn.EngineImageConditionTypeReadyReasonBinary,
			"no running instance manager on nodes "+joinNames(missing)
	}
	// Only a change is written: a new probe time alone would rewrite the
	// status on every engine or replica event.
	if c := longhorn.GetCondition(st.Conditions, longhorn.EngineImageConditionTypeReady); c.Type == "" ||
		c.Status != ready || c.Reason != reason || c.Message != msg {
		st.Conditions = longhorn.SetCondition(st.Conditions, longhorn.EngineImageConditionTypeReady, ready, reason, msg, ts)
	}
	st.RefCount = obs.refCount
	switch {
	case st.RefCount > 0:
		st.NoRefSince = ""
	case st.NoRefSince == "":
		st.NoRefSince = ts
	default:
		if _, err := time.Parse(time.RFC3339, st.NoRefSince); err != nil {
			st.NoRefSince = ts // unreadable: the clean-up timeout starts now
		}
	}
	return st
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "(no node is up)"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}
