package blobobject

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/agentenv/agentenv/registry"
)

// Backends are the accepted Config.Backend values.
var Backends = []string{"s3", "gcs", "azure"}

// DefaultPingTimeout bounds the reachability check of Open.
const DefaultPingTimeout = 15 * time.Second

// Config selects and opens a bucket. Credential fields hold values the
// caller resolved (from the secret store); they are never logged or put in
// an error.
type Config struct {
	// Backend is "s3", "gcs" or "azure".
	Backend string
	// URL names the bucket and the key prefix:
	//
	//	s3://BUCKET/PREFIX?region=R&endpoint=http://host:9000&path_style=true
	//	gs://BUCKET/PREFIX
	//	azblob://CONTAINER/PREFIX?account=NAME&endpoint=https://host
	//
	// The prefix ("" = the whole bucket) gets a trailing '/' when it lacks
	// one. s3: region defaults to us-east-1 with an endpoint, otherwise to
	// the AWS environment; path_style (bucket in the path, what most
	// S3-compatible servers want) defaults to true when an endpoint is set.
	// gs: endpoint (a GCS-compatible server such as an emulator) defaults
	// to Google's; with an endpoint and no credentials_json, requests are
	// unauthenticated, as emulators expect. azblob: account is required;
	// endpoint defaults to https://ACCOUNT.blob.core.windows.net.
	URL string
	// s3: a static key pair (and optional session token). Empty = the AWS
	// default chain (environment, shared files, instance role).
	AccessKeyID, SecretAccessKey, SessionToken string
	// gcs: a service account key (JSON). Empty = application default
	// credentials.
	CredentialsJSON string
	// azure: the storage account key. Empty = the Azure default credential
	// chain.
	AccountKey string
	// Store tunes the store (part size, concurrency); Scheme, Bucket and
	// Prefix come from URL.
	Store Options
	// PingTimeout bounds the check that the bucket answers; 0 =
	// DefaultPingTimeout.
	PingTimeout time.Duration
	// HTTPClient replaces the backends' HTTP client (tests); nil = default.
	HTTPClient *http.Client
}

// Open opens the bucket of c and checks that it answers. Errors name the
// config field at fault ("url", "backend") or the bucket URL; they wrap
// registry.ErrInvalid for bad config and registry.ErrUnavailable for an
// unreachable bucket.
func Open(ctx context.Context, c *Config) (*Store, error) {
	if c == nil {
		return nil, &registry.InvalidError{Field: "backend", Reason: "no config"}
	}
	u, bucket, prefix, err := parseURL(c)
	if err != nil {
		return nil, err
	}
	var b *blob.Bucket
	switch c.Backend {
	case "s3":
		b, err = openS3(ctx, c, u, bucket)
	case "gcs":
		b, err = openGCS(ctx, c, u, bucket)
	case "azure":
		b, err = openAzure(ctx, c, u, bucket)
	}
	if err != nil {
		return nil, err
	}
	opt := c.Store
	opt.Scheme, opt.Bucket, opt.Prefix = u.Scheme, bucket, prefix
	st := New(b, &opt)
	timeout := c.PingTimeout
	if timeout <= 0 {
		timeout = DefaultPingTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

var schemes = map[string]string{"s3": "s3", "gcs": "gs", "azure": "azblob"}

// queryKeys are the URL parameters each backend reads; others are refused
// (a credential pasted into the URL would otherwise be ignored silently).
var queryKeys = map[string][]string{"s3": {"region", "endpoint", "path_style"}, "gcs": {"endpoint"}, "azure": {"account", "endpoint"}}

func parseURL(c *Config) (u *url.URL, bucket, prefix string, err error) {
	scheme, ok := schemes[c.Backend]
	if !ok {
		return nil, "", "", &registry.InvalidError{Field: "backend", Value: c.Backend, Reason: "want " + strings.Join(Backends, ", ")}
	}
	bad := func(reason string) error {
		// The URL is config, not a secret, but drop any userinfo anyway.
		return &registry.InvalidError{Field: "url", Value: redactURL(c.URL), Reason: reason}
	}
	if c.URL == "" {
		return nil, "", "", bad("empty (want " + scheme + "://BUCKET/PREFIX)")
	}
	u, err = url.Parse(c.URL)
	if err != nil {
		return nil, "", "", bad("not a URL")
	}
	switch {
	case u.Scheme != scheme:
		return nil, "", "", bad("the " + c.Backend + " backend wants a " + scheme + ":// URL")
	case u.User != nil:
		return nil, "", "", bad("credentials do not go in the URL: use the credential keys with secret: references")
	case u.Host == "":
		return nil, "", "", bad("no bucket (want " + scheme + "://BUCKET/PREFIX)")
	case u.Fragment != "":
		return nil, "", "", bad("has a #fragment")
	}
	for k := range u.Query() {
		if !contains(queryKeys[c.Backend], k) {
			// Its value may be a pasted credential: name the key only.
			return nil, "", "", &registry.InvalidError{Field: "url", Value: scheme + "://" + u.Host + u.Path, Reason: fmt.Sprintf("unknown parameter %q (the %s backend reads: %s)", k, c.Backend, strings.Join(queryKeys[c.Backend], ", "))}
		}
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix != "" {
		if err := registry.ValidatePrefix(prefix); err != nil {
			return nil, "", "", bad("bad prefix: " + err.Error())
		}
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
	}
	return u, u.Host, prefix, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if i := strings.Index(s, "@"); i >= 0 && err != nil {
			return "<unparsable URL>"
		}
		return s
	}
	u.User = nil
	return u.String()
}

func openS3(ctx context.Context, c *Config, u *url.URL, bucket string) (*blob.Bucket, error) {
	q := u.Query()
	endpoint, region := q.Get("endpoint"), q.Get("region")
	pathStyle := endpoint != ""
	if v := q.Get("path_style"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &registry.InvalidError{Field: "url", Value: c.URL, Reason: "path_style wants true or false"}
		}
		pathStyle = b
	}
	if endpoint != "" {
		eu, err := url.Parse(endpoint)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return nil, &registry.InvalidError{Field: "url", Value: redactURL(c.URL), Reason: "endpoint wants http(s)://host[:port]"}
		}
		if eu.User != nil {
			return nil, &registry.InvalidError{Field: "url", Value: redactURL(c.URL), Reason: "credentials do not go in the endpoint"}
		}
		if region == "" {
			region = "us-east-1" // S3-compatible servers ignore it, the signer needs one
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return nil, &registry.InvalidError{Field: "access_key_id", Reason: "access_key_id and secret_access_key go together"}
	}
	var loadOpts []func(*awsconfig.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(region))
	}
	if c.AccessKeyID != "" {
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	if c.HTTPClient != nil {
		loadOpts = append(loadOpts, awsconfig.WithHTTPClient(c.HTTPClient))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("object store s3://%s: aws config: %w", bucket, err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		// The SDK logs to stderr on its own; the store reports through
		// its errors instead.
		o.Logger = logging.Nop{}
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// S3-compatible servers often send no checksums.
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	var bopts s3blob.Options
	if endpoint != "" {
		// S3-compatible servers reject the newer default checksum headers.
		bopts.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	b, err := s3blob.OpenBucket(ctx, client, bucket, &bopts)
	if err != nil {
		return nil, fmt.Errorf("object store s3://%s: %w", bucket, err)
	}
	return b, nil
}

func openGCS(ctx context.Context, c *Config, u *url.URL, bucket string) (*blob.Bucket, error) {
	endpoint := u.Query().Get("endpoint")
	if endpoint != "" {
		if eu, err := url.Parse(endpoint); err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || eu.User != nil {
			return nil, &registry.InvalidError{Field: "url", Value: redactURL(c.URL), Reason: "endpoint wants http(s)://host[:port]"}
		}
	}
	var rt http.RoundTripper = gcp.DefaultTransport()
	if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
		rt = c.HTTPClient.Transport
	}
	var client *gcp.HTTPClient
	switch {
	case c.CredentialsJSON != "":
		creds, err := google.CredentialsFromJSON(ctx, []byte(c.CredentialsJSON), "https://www.googleapis.com/auth/devstorage.read_write")
		if err != nil {
			// The parse error may quote the key: never pass it on.
			return nil, &registry.InvalidError{Field: "credentials_json", Reason: "not a service account key (JSON)"}
		}
		if client, err = gcp.NewHTTPClient(rt, gcp.CredentialsTokenSource(creds)); err != nil {
			return nil, fmt.Errorf("object store gs://%s: %w", bucket, err)
		}
	case endpoint != "":
		// An emulator checks no credentials, and looking up the
		// application default ones would fail on a machine without any.
		client = &gcp.HTTPClient{Client: http.Client{Transport: rt}}
	default:
		creds, err := gcp.DefaultCredentials(ctx)
		if err != nil {
			return nil, fmt.Errorf("object store gs://%s: no credentials_json and no application default credentials: %w", bucket, registry.ErrUnavailable)
		}
		if client, err = gcp.NewHTTPClient(rt, gcp.CredentialsTokenSource(creds)); err != nil {
			return nil, fmt.Errorf("object store gs://%s: %w", bucket, err)
		}
	}
	// Reads go through the JSON API like every other call (the client's
	// default reads through the XML API): Google recommends it for
	// consistency, and it is the API GCS-compatible servers implement, so
	// the path tested against an emulator is the one used in production.
	opts := gcsblob.Options{ClientOptions: []option.ClientOption{storage.WithJSONReads()}}
	if endpoint != "" {
		opts.ClientOptions = append(opts.ClientOptions, option.WithEndpoint(strings.TrimSuffix(endpoint, "/")+"/storage/v1/"))
	}
	b, err := gcsblob.OpenBucket(ctx, client, bucket, &opts)
	if err != nil {
		return nil, fmt.Errorf("object store gs://%s: %w", bucket, err)
	}
	return b, nil
}

func openAzure(ctx context.Context, c *Config, u *url.URL, containerName string) (*blob.Bucket, error) {
	q := u.Query()
	account := q.Get("account")
	if account == "" {
		return nil, &registry.InvalidError{Field: "url", Value: redactURL(c.URL), Reason: "the azure backend needs ?account=STORAGE_ACCOUNT"}
	}
	svc := q.Get("endpoint")
	if svc == "" {
		svc = "https://" + account + ".blob.core.windows.net"
	} else if eu, err := url.Parse(svc); err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || eu.User != nil {
		return nil, &registry.InvalidError{Field: "url", Value: redactURL(c.URL), Reason: "endpoint wants http(s)://host[:port][/path]"}
	}
	containerURL := strings.TrimSuffix(svc, "/") + "/" + containerName
	var (
		client *container.Client
		err    error
	)
	if c.AccountKey != "" {
		cred, cerr := container.NewSharedKeyCredential(account, c.AccountKey)
		if cerr != nil {
			return nil, &registry.InvalidError{Field: "account_key", Reason: "not a storage account key (base64)"}
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, nil)
	} else {
		client, err = azureblob.NewDefaultClient(azureblob.ServiceURL(strings.TrimSuffix(svc, "/")), azureblob.ContainerName(containerName))
	}
	if err != nil {
		return nil, fmt.Errorf("object store azblob://%s: %w", containerName, err)
	}
	b, err := azureblob.OpenBucket(ctx, client, nil)
	if err != nil {
		return nil, fmt.Errorf("object store azblob://%s: %w", containerName, err)
	}
	return b, nil
}
