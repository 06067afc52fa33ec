package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// CredentialSource says where the default keychain reads registry
// credentials from, for error messages: the user must know which file to fix.
const CredentialSource = "$DOCKER_CONFIG/config.json if DOCKER_CONFIG is set, else ~/.docker/config.json (as `docker login` writes it), and the credential helpers it names (e.g. docker-credential-ecr-login); with neither file, Podman's $REGISTRY_AUTH_FILE or containers/auth.json"

// DefaultCheckTimeout bounds CheckPush when the caller's context has no
// deadline: an unreachable registry must fail a run in seconds, not after
// the OS's TCP timeout.
const DefaultCheckTimeout = 10 * time.Second

// CheckPush asks the registry that repo names whether the credentials the
// keychain gives may push there, before anything is built or any cluster
// object written: it pings the registry (reachability and TLS), completes
// its authentication handshake (basic auth or a bearer token for push
// scope), and starts a blob upload, which it then cancels. Starting an
// upload is the only portable test of push permission: some registries
// hand out a token for any scope and refuse only the write.
//
// repo is a repository, e.g. "123456789012.dkr.ecr.eu-west-1.amazonaws.com/meshclaims/workload".
// The error names the registry, the user (never the password) and what to fix.
func CheckPush(ctx context.Context, repo string, opts PushOptions) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCheckTimeout)
		defer cancel()
	}
	var nameOpts []name.Option
	if opts.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.NewRepository(repo, append(nameOpts, name.StrictValidation)...)
	if err != nil {
		return fmt.Errorf("images: %q is not a repository (accepted: host[:port]/path, lower case, e.g. registry.example.com:5000/meshclaims/workload): %w", repo, err)
	}
	keychain := opts.Keychain
	if keychain == nil {
		keychain = authn.DefaultKeychain
	}
	auth, err := authn.Resolve(ctx, keychain, r)
	if err != nil {
		return fmt.Errorf("images: reading credentials for %s from %s: %w", r.RegistryStr(), CredentialSource, err)
	}
	user := userOf(ctx, auth)
	base := opts.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	tr, err := transport.NewWithContext(ctx, r.Registry, auth, base, []string{r.Scope(transport.PushScope)})
	if err != nil {
		return registryError(r, user, err)
	}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	u := fmt.Sprintf("%s://%s/v2/%s/blobs/uploads/", r.Scheme(), r.RegistryStr(), r.RepositoryStr())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return registryError(r, user, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch resp.StatusCode {
	case http.StatusAccepted:
		// Cancel the upload: a started upload reserves space on some registries.
		if loc := resp.Header.Get("Location"); loc != "" {
			cancelUpload(ctx, client, req, loc)
		}
		return nil
	case http.StatusUnauthorized:
		return fmt.Errorf("images: registry %s refused the credentials %s: fix them in %s", r.RegistryStr(), user, CredentialSource)
	case http.StatusForbidden:
		return fmt.Errorf("images: registry %s denies %s push access to %s: grant push (e.g. ECR: ecr:InitiateLayerUpload and ecr:PutImage) or choose another -image-registry", r.RegistryStr(), user, r.RepositoryStr())
	default:
		return fmt.Errorf("images: registry %s answered a push check on %s with %s: %s", r.RegistryStr(), r.RepositoryStr(), resp.Status, strings.TrimSpace(string(body)))
	}
}

// cancelUpload deletes the upload CheckPush started; a failure is ignored,
// since registries expire abandoned uploads anyway.
func cancelUpload(ctx context.Context, client *http.Client, post *http.Request, loc string) {
	u, err := post.URL.Parse(loc)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.String(), nil)
	if err != nil {
		return
	}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// userOf names who the credentials are for, for messages: "of user NAME",
// "(a token)" or "(none: anonymous)". Never the secret.
func userOf(ctx context.Context, a authn.Authenticator) string {
	if a == authn.Anonymous {
		return "(none: anonymous; the docker config has no entry for this registry)"
	}
	c, err := authn.Authorization(ctx, a)
	switch {
	case err != nil:
		return "(unreadable: " + err.Error() + ")"
	case c.Username != "":
		return fmt.Sprintf("of user %q", c.Username)
	case c.IdentityToken != "" || c.RegistryToken != "":
		return "(an identity token)"
	default:
		return "(none: anonymous)"
	}
}

// registryError turns a transport error into what to fix: unreachable,
// TLS not trusted, or credentials refused during the token handshake.
func registryError(r name.Repository, user string, err error) error {
	var terr *transport.Error
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	var rerr tls.RecordHeaderError
	switch {
	case errors.As(err, &terr) && terr.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("images: registry %s refused the credentials %s: fix them in %s: %w", r.RegistryStr(), user, CredentialSource, err)
	case errors.As(err, &terr) && terr.StatusCode == http.StatusForbidden:
		return fmt.Errorf("images: registry %s denies %s push access to %s: %w", r.RegistryStr(), user, r.RepositoryStr(), err)
	case errors.As(err, &uerr), errors.As(err, &herr):
		return fmt.Errorf("images: registry %s presents a certificate this machine does not trust; give its CA with -image-registry-ca FILE (the nodes must trust it too): %w", r.RegistryStr(), err)
	case errors.As(err, &rerr):
		return fmt.Errorf("images: registry %s does not speak TLS; a plain-HTTP registry is accepted only on localhost or a private address: %w", r.RegistryStr(), err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("images: registry %s did not answer within the check's time (is -image-registry right, and is it reachable from here?): %w", r.RegistryStr(), err)
	default:
		return fmt.Errorf("images: registry %s is not reachable (is -image-registry right?): %w", r.RegistryStr(), err)
	}
}

// TransportWithCA returns an HTTP transport that trusts the system's roots
// and the PEM certificates in caFile: a private registry signed by a
// company CA the Go process would not otherwise trust.
func TransportWithCA(caFile string) (http.RoundTripper, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("images: registry CA: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("images: registry CA %s holds no PEM certificate; accepted: a file of one or more \"-----BEGIN CERTIFICATE-----\" blocks", caFile)
	}
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}
