package app

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/engineapi"
)

// grpcTLSCheckInterval is how often the manager reads the Secret
// longhorn-grpc-tls again.
const grpcTLSCheckInterval = 10 * time.Second

// grpcTLSWatcher keeps the manager's instance-manager TLS in step with the
// Secret longhorn-grpc-tls. Read at start, it decides plaintext or mutual
// TLS (instance managers decide the same when they start: they mount the
// Secret). New certificates in an existing Secret (a rotation) are loaded
// and every connection re-dialed with them, without a restart; the
// instance managers reload their mounted files the same way. A Secret
// that appears or disappears while running changes nothing until the
// managers and instance-manager pods restart (a running instance manager
// cannot switch between plaintext and TLS), which is logged.
type grpcTLSWatcher struct {
	kube      kubernetes.Interface
	namespace string
	h         *engineapi.Handler
	enabled   bool   // TLS at start
	digest    string // of the Secret data in use ("" = none)
}

// managerEngineHandler is the manager's engineapi.Handler, with mutual TLS
// when the Secret longhorn-grpc-tls exists, kept in step with it until ctx
// ends (grpcTLSWatcher).
func managerEngineHandler(ctx context.Context, kube kubernetes.Interface, namespace string) (*engineapi.Handler, error) {
	w := &grpcTLSWatcher{kube: kube, namespace: namespace}
	h, err := w.handler(ctx)
	if err == nil {
		go w.run(ctx, grpcTLSCheckInterval)
	}
	return h, err
}

// handler reads the Secret and returns the manager's engineapi.Handler,
// dialing instance managers with mutual TLS when it exists.
func (w *grpcTLSWatcher) handler(ctx context.Context) (*engineapi.Handler, error) {
	s, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if s == nil {
		logrus.Info("No Secret " + engineapi.TLSSecretName + ": instance-manager gRPC in plaintext")
	} else {
		if cfg, err = secretTLS(s); err != nil {
			return nil, err
		}
		logrus.Info("Secret " + engineapi.TLSSecretName + ": instance-manager gRPC with mutual TLS")
		w.enabled, w.digest = true, secretDigest(s)
	}
	w.h = engineapi.NewHandler(engineapi.HandlerOptions{TLS: cfg})
	return w.h, nil
}

func (w *grpcTLSWatcher) get(ctx context.Context) (*corev1.Secret, error) {
	s, err := w.kube.CoreV1().Secrets(w.namespace).Get(ctx, engineapi.TLSSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", engineapi.TLSSecretName, err)
	}
	return s, nil
}

func secretTLS(s *corev1.Secret) (*tls.Config, error) {
	return engineapi.ClientTLS(s.Data[engineapi.TLSCAFile], s.Data[engineapi.TLSCertFile], s.Data[engineapi.TLSKeyFile])
}

func secretDigest(s *corev1.Secret) string {
	h := sha256.New()
	for _, k := range []string{engineapi.TLSCAFile, engineapi.TLSCertFile, engineapi.TLSKeyFile} {
		sum := sha256.Sum256(s.Data[k])
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// run checks the Secret every interval until ctx ends.
func (w *grpcTLSWatcher) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check(ctx)
		}
	}
}

// check applies one reading of the Secret (see grpcTLSWatcher).
func (w *grpcTLSWatcher) check(ctx context.Context) {
	s, err := w.get(ctx)
	if err != nil {
		logrus.WithError(err).Warn("checking the gRPC TLS Secret")
		return
	}
	switch {
	case s == nil && w.enabled && w.digest != "":
		logrus.Warnf("Secret %s deleted: mutual TLS stays on until the managers and instance-manager pods restart", engineapi.TLSSecretName)
		w.digest = ""
	case s != nil && !w.enabled && w.digest == "":
		logrus.Warnf("Secret %s created: instance-manager gRPC stays plaintext until the managers and instance-manager pods restart", engineapi.TLSSecretName)
		w.digest = "ignored"
	case s != nil && w.enabled && secretDigest(s) != w.digest:
		cfg, err := secretTLS(s)
		if err != nil {
			logrus.WithError(err).Warnf("Secret %s changed but cannot be used; keeping the previous certificates", engineapi.TLSSecretName)
			return
		}
		w.digest = secretDigest(s)
		w.h.SetTLS(cfg)
		logrus.Infof("Secret %s changed: instance-manager connections re-dialed with the new certificates", engineapi.TLSSecretName)
	}
}
