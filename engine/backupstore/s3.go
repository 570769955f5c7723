package backupstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/net/http/httpproxy"
)

// s3Driver stores the backupstore in an S3 bucket under a key prefix
// (minio-go). URL: s3://bucket@region/prefix (or s3://bucket/prefix); the
// endpoint, keys, CA and addressing style come from the credential Secret.
type s3Driver struct {
	client *minio.Client
	bucket string
	prefix string
	url    string
}

// s3DialTimeout and s3HeaderTimeout bound a request to a dead or silent
// endpoint, so a backup to an unreachable target fails instead of hanging
// (Longhorn bug #6491).
const (
	s3DialTimeout   = 10 * time.Second
	s3HeaderTimeout = 60 * time.Second
)

func parseS3URL(u *url.URL) (bucket, region, prefix string, err error) {
	if u.User != nil {
		bucket, region = u.User.Username(), u.Host
	} else {
		bucket = u.Host
	}
	if bucket == "" || u.Path == "" {
		return "", "", "", fmt.Errorf("%w: backup target URL %q: want s3://bucket@region/path/ or s3://bucket/path/", ErrInvalid, u.String())
	}
	return bucket, region, strings.Trim(u.Path, "/"), nil
}

// s3Transport builds the HTTP transport: custom CA bundle (AWS_CERT, PEM),
// proxies (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) and the timeouts.
func s3Transport(cred Credential) (*http.Transport, error) {
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: s3DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   s3DialTimeout,
		ResponseHeaderTimeout: s3HeaderTimeout,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
	}
	if pem := cred[AWSCert]; pem != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return nil, fmt.Errorf("%w: credential %s holds no PEM certificate", ErrInvalid, AWSCert)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	pc := httpproxy.Config{HTTPProxy: cred[HTTPProxy], HTTPSProxy: cred[HTTPSProxy], NoProxy: cred[NoProxy]}
	if pc.HTTPProxy != "" || pc.HTTPSProxy != "" {
		pf := pc.ProxyFunc()
		tr.Proxy = func(r *http.Request) (*url.URL, error) { return pf(r.URL) }
	}
	return tr, nil
}

// s3BucketLookup decides how requests address the bucket, from the
// credential's VIRTUAL_HOSTED_STYLE and AWS_ENDPOINTS, as Longhorn's
// backupstore: "true" puts the bucket in the host name
// (http://<bucket>.<endpoint>/<key>, virtual-hosted style), "false" in the
// path (http://<endpoint>/<bucket>/<key>); unset, a custom endpoint gets
// path style and AWS itself virtual-hosted style (minio-go's automatic
// choice, which falls back to path style for bucket names AWS cannot put in
// a TLS host name). Any other value is refused naming the key: Longhorn
// would silently treat it as unset.
func s3BucketLookup(cred Credential) (minio.BucketLookupType, error) {
	switch v := cred[VirtualHostedStyle]; v {
	case "true":
		return minio.BucketLookupDNS, nil
	case "false":
		return minio.BucketLookupPath, nil
	case "":
		if strings.TrimSpace(cred[AWSEndPoint]) != "" {
			return minio.BucketLookupPath, nil
		}
		return minio.BucketLookupAuto, nil
	default:
		return minio.BucketLookupPath, fmt.Errorf("%w: credential %s=%q: want \"true\" (virtual-hosted style) or \"false\" (path style)",
			ErrInvalid, VirtualHostedStyle, v)
	}
}

func openS3(ctx context.Context, u *url.URL, cred Credential) (Driver, error) {
	bucket, region, prefix, err := parseS3URL(u)
	if err != nil {
		return nil, err
	}
	endpoint, secure := "s3.amazonaws.com", true
	if region != "" {
		endpoint = "s3." + region + ".amazonaws.com"
	}
	if ep := strings.TrimSpace(cred[AWSEndPoint]); ep != "" {
		eu, err := url.Parse(ep)
		if err != nil || eu.Host == "" || (eu.Scheme != "http" && eu.Scheme != "https") {
			return nil, fmt.Errorf("%w: credential %s=%q: want http(s)://host[:port]", ErrInvalid, AWSEndPoint, ep)
		}
		endpoint, secure = eu.Host, eu.Scheme == "https"
	}
	tr, err := s3Transport(cred)
	if err != nil {
		return nil, err
	}
	lookup, err := s3BucketLookup(cred)
	if err != nil {
		return nil, err
	}
	var creds *credentials.Credentials
	if cred[AWSAccessKey] != "" {
		creds = credentials.NewStaticV4(cred[AWSAccessKey], cred[AWSSecretKey], cred[AWSSessionToken])
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.IAM{}})
	}
	client, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Transport: tr,
		Region: region, BucketLookup: lookup, MaxRetries: 3})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, u.String(), err)
	}
	target := "s3://" + bucket
	if region != "" {
		target += "@" + region
	}
	d := &s3Driver{client: client, bucket: bucket, prefix: prefix, url: target + "/" + prefix}
	if prefix != "" {
		d.url += "/"
	}
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// check lists one key, which fails on a wrong endpoint, bucket or
// credentials.
func (d *s3Driver) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s3HeaderTimeout)
	defer cancel()
	for obj := range d.client.ListObjects(ctx, d.bucket, minio.ListObjectsOptions{Prefix: d.key("") + "/", MaxKeys: 1}) {
		if obj.Err != nil {
			return d.mapErr(d.url, obj.Err)
		}
		break
	}
	return nil
}

func (d *s3Driver) Kind() string { return KindS3 }
func (d *s3Driver) URL() string  { return d.url }
func (d *s3Driver) Close() error { return nil }

func (d *s3Driver) key(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if d.prefix == "" {
		return p
	}
	if p == "" {
		return d.prefix
	}
	return d.prefix + "/" + p
}

func (d *s3Driver) mapErr(p string, err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || (resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket"):
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	case resp.StatusCode == http.StatusForbidden || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch" ||
		resp.Code == "AccessDenied" || resp.Code == "NoSuchBucket":
		return fmt.Errorf("%w: %s: %s (%s)", ErrUnavailable, d.url, resp.Message, resp.Code)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", p, err)
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, d.url, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

func (d *s3Driver) Stat(ctx context.Context, p string) (FileInfo, error) {
	info, err := d.client.StatObject(ctx, d.bucket, d.key(p), minio.StatObjectOptions{})
	if err != nil {
		return FileInfo{}, d.mapErr(p, err)
	}
	return FileInfo{Size: info.Size, ModTime: info.LastModified.UTC()}, nil
}

func (d *s3Driver) Read(ctx context.Context, p string) (io.ReadCloser, error) {
	// One GET whose error (a missing object) is Read's and whose body is
	// streamed to the caller. Not minio.Object.Stat: that sends a HEAD and
	// then a GET with If-Match on the HEAD's ETag, which fails with 412
	// ("At least one of the pre-conditions you specified did not hold") when
	// a lock file is rewritten in between.
	body, _, _, err := minio.Core{Client: d.client}.GetObject(ctx, d.bucket, d.key(p), minio.GetObjectOptions{})
	if err != nil {
		return nil, d.mapErr(p, err)
	}
	return s3Object{body, d, p}, nil
}

// s3Object is an object's body whose read errors are mapped as the
// driver's.
type s3Object struct {
	io.ReadCloser
	d *s3Driver
	p string
}

func (o s3Object) Read(b []byte) (int, error) {
	n, err := o.ReadCloser.Read(b)
	if err != nil && err != io.EOF {
		err = o.d.mapErr(o.p, err)
	}
	return n, err
}

func (d *s3Driver) Write(ctx context.Context, p string, r io.Reader, size int64) error {
	_, err := d.client.PutObject(ctx, d.bucket, d.key(p), r, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream", DisableContentSha256: true, DisableMultipart: size <= 64<<20,
	})
	return d.mapErr(p, err)
}

func (d *s3Driver) List(ctx context.Context, dir string) ([]string, error) {
	prefix := d.key(dir) + "/"
	if prefix == "/" {
		prefix = ""
	}
	var out []string
	for obj := range d.client.ListObjects(ctx, d.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			return nil, d.mapErr(dir, obj.Err)
		}
		if n := strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/"); n != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

func (d *s3Driver) Remove(ctx context.Context, p string) error {
	key := d.key(p)
	if key == d.prefix {
		return fmt.Errorf("%w: refusing to remove the target root", ErrInvalid)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objs := make(chan minio.ObjectInfo)
	listErr := make(chan error, 1)
	go func() {
		defer close(objs)
		for obj := range d.client.ListObjects(ctx, d.bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true}) {
			if obj.Err != nil {
				listErr <- obj.Err
				return
			}
			select {
			case objs <- obj:
			case <-ctx.Done():
				listErr <- ctx.Err()
				return
			}
		}
		listErr <- nil
	}()
	for re := range d.client.RemoveObjects(ctx, d.bucket, objs, minio.RemoveObjectsOptions{}) {
		if re.Err != nil {
			return d.mapErr(re.ObjectName, re.Err)
		}
	}
	if err := <-listErr; err != nil {
		return d.mapErr(p, err)
	}
	if err := d.client.RemoveObject(ctx, d.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(d.mapErr(p, err), ErrNotFound) {
			return nil
		}
		return d.mapErr(p, err)
	}
	return nil
}
