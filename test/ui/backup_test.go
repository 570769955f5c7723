package ui

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/testbed/backuptarget"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// s3SecretName is the credential Secret of the suite's S3 backup target.
const s3SecretName = "ui-e2e-s3"

// backupTargetEnv starts an S3 server (versitygw) on the cluster bridge's
// gateway, so the manager and the instance managers in the pods reach it,
// writes its credential Secret (Longhorn's AWS_* keys) in longhorn-system,
// and returns the Playwright environment that names them
// (LONGHORN_UI_S3_URL, LONGHORN_UI_S3_SECRET) and a stop function that
// removes the server, its objects and the Secret. Without versitygw the
// backup spec skips (nil env), unless tools are required.
func backupTargetEnv(ctx context.Context, c *cluster.Config, f *framework.Cluster, required bool) ([]string, func(), error) {
	bin := backuptarget.FindVersitygw()
	if bin == "" {
		if required {
			return nil, nil, fmt.Errorf("versitygw not found: run make testbin-backup, or set LONGHORN_VERSITYGW")
		}
		logf("versitygw not found: the backup spec skips")
		return nil, func() {}, nil
	}
	root, err := os.MkdirTemp("", "lhui-s3-")
	if err != nil {
		return nil, nil, err
	}
	s3, err := backuptarget.StartS3ServerOn(bin, root, "ui-e2e", c.Gateway().String())
	if err != nil {
		os.RemoveAll(root)
		return nil, nil, err
	}
	secrets := f.Kube.CoreV1().Secrets(framework.Namespace)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s3SecretName, Namespace: framework.Namespace}, StringData: s3.Credential}
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if err != nil {
			s3.Stop()
			os.RemoveAll(root)
			return nil, nil, err
		}
	} else if err != nil {
		s3.Stop()
		os.RemoveAll(root)
		return nil, nil, err
	}
	logf("S3 backup target %s at %s (secret %s)", s3.URL, s3.Endpoint, s3SecretName)
	stop := func() {
		_ = secrets.Delete(context.Background(), s3SecretName, metav1.DeleteOptions{})
		s3.Stop()
		os.RemoveAll(root)
	}
	return []string{"LONGHORN_UI_S3_URL=" + s3.URL, "LONGHORN_UI_S3_SECRET=" + s3SecretName}, stop, nil
}
