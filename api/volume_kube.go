package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// CSIDriverName is Longhorn's CSI driver name, the driver of the
// PersistentVolumes pvCreate makes.
const CSIDriverName = "driver.longhorn.io"

// pvCreate and pvcCreate make a Kubernetes PersistentVolume for an existing
// volume and a PersistentVolumeClaim bound to it (Longhorn's PVCreate and
// PVCCreate, used by its UI to hand a volume made in Longhorn to a
// workload).
func init() {
	volumeActionTable["pvCreate"] = volumeAction{(*Server).pvCreate, in("PVCreateInput"), PVCreateInput{}}
	volumeActionTable["pvcCreate"] = volumeAction{(*Server).pvcCreate, in("PVCCreateInput"), PVCCreateInput{}}
}

// PVCreateInput is the body of pvCreate: the PV name (default: the volume
// name), filesystem (default ext4), the secret of an encrypted volume and
// the storage class (default: setting default-longhorn-static-storage-class).
type PVCreateInput struct {
	PVName           string `json:"pvName"`
	FSType           string `json:"fsType"`
	SecretName       string `json:"secretName"`
	SecretNamespace  string `json:"secretNamespace"`
	StorageClassName string `json:"storageClassName"`
}

// PVCCreateInput is the body of pvcCreate.
type PVCCreateInput struct {
	Namespace string `json:"namespace"`
	PVCName   string `json:"pvcName"`
}

// kube returns Options.Kube or a 503.
func (s *Server) kube() error {
	if s.opts.Kube == nil {
		return newError(http.StatusServiceUnavailable, CodeServerError, "this API server has no Kubernetes client for PersistentVolumes")
	}
	return nil
}

// pvAccessMode maps a volume's access mode to the PV's.
func pvAccessMode(m longhorn.AccessMode) corev1.PersistentVolumeAccessMode {
	switch m {
	case longhorn.AccessModeReadWriteMany:
		return corev1.ReadWriteMany
	case longhorn.AccessModeReadWriteOncePod:
		return corev1.ReadWriteOncePod
	}
	return corev1.ReadWriteOnce
}

// PVForVolume is the PersistentVolume Longhorn makes for v (datastore
// NewPVManifestForVolume): CSI driver driver.longhorn.io, volume handle the
// volume's name, its scheduling parameters as volume attributes, reclaim
// policy Retain.
func PVForVolume(v *longhorn.Volume, pvName, storageClass, fsType, secretNamespace, secretName string) *corev1.PersistentVolume {
	attrs := map[string]string{
		"diskSelector":        strings.Join(v.Spec.DiskSelector, ","),
		"nodeSelector":        strings.Join(v.Spec.NodeSelector, ","),
		"numberOfReplicas":    strconv.Itoa(v.Spec.NumberOfReplicas),
		"staleReplicaTimeout": strconv.Itoa(v.Spec.StaleReplicaTimeout),
		"dataEngine":          string(v.Spec.DataEngine),
	}
	if v.Spec.Encrypted {
		attrs["encrypted"] = "true"
	}
	csi := &corev1.CSIPersistentVolumeSource{Driver: CSIDriverName, FSType: fsType, VolumeHandle: v.Name, VolumeAttributes: attrs}
	if secretName != "" {
		ref := &corev1.SecretReference{Name: secretName, Namespace: secretNamespace}
		csi.NodePublishSecretRef, csi.NodeStageSecretRef, csi.NodeExpandSecretRef = ref, ref, ref
	}
	mode := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(v.Spec.Size, resource.BinarySI)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{pvAccessMode(v.Spec.AccessMode)},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			VolumeMode:                    &mode,
			StorageClassName:              storageClass,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: csi},
		}}
}

// volumePV returns the PersistentVolume of volume v (CSI driver and volume
// handle), nil when there is none.
func (s *Server) volumePV(ctx context.Context, v *longhorn.Volume) (*corev1.PersistentVolume, error) {
	pvs, err := s.opts.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pvs.Items {
		if c := pvs.Items[i].Spec.CSI; c != nil && c.Driver == CSIDriverName && c.VolumeHandle == v.Name {
			return &pvs.Items[i], nil
		}
	}
	return nil, nil
}

func (s *Server) pvCreate(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in PVCreateInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if err := s.kube(); err != nil {
		return 0, nil, err
	}
	if in.PVName == "" {
		in.PVName = v.Name
	}
	if errs := validation.IsDNS1123Subdomain(in.PVName); len(errs) > 0 {
		return 0, nil, invalidInput("pvName", "%q is not a valid PersistentVolume name: %s", in.PVName, strings.Join(errs, "; "))
	}
	if in.FSType == "" {
		in.FSType = "ext4"
	}
	if err := oneOf("fsType", in.FSType, "ext4", "xfs"); err != nil {
		return 0, nil, err
	}
	if (in.SecretName == "") != (in.SecretNamespace == "") {
		return 0, nil, invalidInput("secretName", "secretName and secretNamespace go together")
	}
	if in.StorageClassName == "" {
		sc, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultLonghornStaticStorageClass)
		if err != nil {
			return 0, nil, err
		}
		in.StorageClassName = sc
	}
	if pv, err := s.volumePV(ctx, v); err != nil {
		return 0, nil, err
	} else if pv != nil {
		return 0, nil, invalidState("volume %s already has the PersistentVolume %s", v.Name, pv.Name)
	}
	pv := PVForVolume(v, in.PVName, in.StorageClassName, in.FSType, in.SecretNamespace, in.SecretName)
	if _, err := s.opts.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// pvcCreate binds a new PersistentVolumeClaim to the volume's PV, which must
// be Available or Released (a Released PV's claim reference is cleared
// first, as Longhorn does).
func (s *Server) pvcCreate(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in PVCCreateInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if err := s.kube(); err != nil {
		return 0, nil, err
	}
	if in.Namespace == "" {
		in.Namespace = "default"
	}
	if errs := validation.IsDNS1123Label(in.Namespace); len(errs) > 0 {
		return 0, nil, invalidInput("namespace", "%q is not a valid namespace: %s", in.Namespace, strings.Join(errs, "; "))
	}
	if in.PVCName == "" {
		in.PVCName = v.Name
	}
	if errs := validation.IsDNS1123Subdomain(in.PVCName); len(errs) > 0 {
		return 0, nil, invalidInput("pvcName", "%q is not a valid PersistentVolumeClaim name: %s", in.PVCName, strings.Join(errs, "; "))
	}
	pv, err := s.volumePV(ctx, v)
	if err != nil {
		return 0, nil, err
	}
	if pv == nil {
		return 0, nil, invalidState("volume %s has no PersistentVolume; create one first (pvCreate)", v.Name)
	}
	if err := s.releaseClaim(ctx, pv); err != nil {
		return 0, nil, err
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: in.PVCName, Namespace: in.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: pv.Spec.AccessModes, StorageClassName: &pv.Spec.StorageClassName,
			VolumeName: pv.Name, Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(v.Spec.Size, resource.BinarySI)}}}}
	if _, err := s.opts.Kube.CoreV1().PersistentVolumeClaims(in.Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// releaseClaim refuses a PV that is claimed (bound, or reserved by a claim
// reference) and clears the claim reference of a Released one, so the new
// claim can bind. A new PV (Pending until the PV controller sees it) with
// no claim reference is taken.
func (s *Server) releaseClaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	switch pv.Status.Phase {
	case corev1.VolumeAvailable, corev1.VolumePending, "":
		if pv.Spec.ClaimRef == nil {
			return nil
		}
		return invalidState("PersistentVolume %s is already claimed by %s/%s", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	case corev1.VolumeReleased:
		pv = pv.DeepCopy()
		pv.Spec.ClaimRef = nil
		_, err := s.opts.Kube.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return invalidState("PersistentVolume %s changed meanwhile; try again", pv.Name)
		}
		return err
	}
	return invalidState("PersistentVolume %s is %s; a claim can only be made for an Available or Released one", pv.Name, pv.Status.Phase)
}
