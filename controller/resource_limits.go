package controller

import (
	"context"
	"fmt"

	"github.com/longhorn-go/longhorn/datastore"
	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	"github.com/longhorn-go/longhorn/types"
)

// volumeResourceLimits reads the resource-limit annotations of the volume
// (types.ParseResourceLimits); a volume already gone has none. A value the
// webhook would refuse (the object was written around it) stops the
// instance from starting rather than running it unlimited.
func volumeResourceLimits(ctx context.Context, ds *datastore.DataStore, name string) (cgroup.Limits, error) {
	v, err := ds.GetVolumeRO(ctx, name)
	if err != nil {
		return cgroup.Limits{}, ignoreNotFound(err)
	}
	l, err := types.ParseResourceLimits(v.Annotations)
	if err != nil {
		return cgroup.Limits{}, fmt.Errorf("volume %s: %w", name, err)
	}
	return l, nil
}
