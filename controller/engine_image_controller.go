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
// reference count is the engines and replicas that use it. An older image
// (left by an upgrade) is deployed where instance managers of that image
// still run and is incompatible outside this manager's CLI API range.
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
	// Node, instance manager, engine and replica changes touch the default
	// image's deployment map and reference count.
	all := onChange(func(any) { c.enqueueDefault() })
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
	if reflect.DeepEqual(st, eiRO.Status) {
		return Done, nil
	}
	next := eiRO.DeepCopy()
	next.Status = st
	_, err = c.ds.UpdateEngineImageStatus(ctx, next)
	return Done, err
}

// engineImageObservation is what an engine image's status is computed from.
type engineImageObservation struct {
	nodes     []string        // Longhorn nodes that are not down
	deployed  map[string]bool // node -> an instance manager of the image runs there
	refCount  int             // engines and replicas using the image
	isDefault bool            // the manager's own --engine-image (this build's binary)
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
	engines, err := c.ds.ListEnginesRO(ctx, nil)
	if err != nil {
		return obs, err
	}
	for _, e := range engines {
		if e.Spec.Image == ei.Spec.Image {
			obs.refCount++
		}
	}
	replicas, err := c.ds.ListReplicasRO(ctx, nil)
	if err != nil {
		return obs, err
	}
	for _, r := range replicas {
		if r.Spec.Image == ei.Spec.Image {
			obs.refCount++
		}
	}
	sort.Strings(obs.nodes)
	return obs, nil
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
