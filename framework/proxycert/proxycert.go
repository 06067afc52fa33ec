// Package proxycert reads the workload certificates a mesh proxy holds from
// its admin endpoint, in the shape each proxy really writes it:
//
//   - ztunnel 1.30's /config_dump (src/admin.rs): a "certificates" list of
//     {identity, state, certChain, rootCerts}, camelCase, each certificate's
//     PEM base64-encoded and its serialNumber in decimal;
//   - Envoy's /config_dump (sidecars, waypoints): the SecretsConfigDump
//     section, whose dynamic_active_secrets carry istio-agent's SDS secrets
//     ("default": tls_certificate.certificate_chain; "ROOTCA":
//     validation_context.trusted_ca) as base64 inline_bytes of PEM.
//
// Certificates are decoded, never matched as text: an identity is the SPIFFE
// URI SAN of a usable chain's leaf, and roots are compared by DER.
package proxycert

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
)

// ZtunnelAvailable is the state ztunnel's dump gives a certificate it holds
// and serves. The others are "Initializing" (being fetched) and
// "Unavailable: <error>" (src/admin.rs, dump_certs).
const ZtunnelAvailable = "Available"

// Identity is one certificate a proxy holds: the identity it is for, the
// chain it presents (leaf first) and the roots it trusts for that identity.
type Identity struct {
	// SPIFFE is the identity: ztunnel's entry name, or Envoy's leaf URI SAN.
	SPIFFE string
	// State is ztunnel's state string; Envoy's active secrets are "active".
	State string
	// Chain is the presented chain, leaf first; empty when not yet issued.
	Chain []*x509.Certificate
	// Roots are the trusted roots.
	Roots []*x509.Certificate
	// Where names the entry in the dump (for reports).
	Where string
}

// Usable reports whether the proxy can present this identity now: ztunnel
// only serves an Available entry, and either proxy needs a chain whose leaf
// carries the identity as a URI SAN. why says what is missing.
func (id Identity) Usable() (ok bool, why string) {
	if id.State != ZtunnelAvailable && id.State != envoyActive {
		return false, fmt.Sprintf("%s: state %q, not %s", id.Where, id.State, ZtunnelAvailable)
	}
	if len(id.Chain) == 0 {
		return false, fmt.Sprintf("%s: empty certificate chain", id.Where)
	}
	for _, u := range id.Chain[0].URIs {
		if u.String() == id.SPIFFE {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s: leaf certificate's URI SANs %v do not include %s", id.Where, id.Chain[0].URIs, id.SPIFFE)
}

// Dump is what one proxy's admin endpoint says it holds.
type Dump struct {
	Proxy      string // "ztunnel" or "envoy"
	Identities []Identity
}

// Check is the outcome of looking for one identity and one set of roots.
type Check struct {
	Found      bool   // a usable entry for the identity exists
	RootsMatch bool   // that entry trusts every certificate of the wanted roots
	Detail     string // what was found or what was missing
}

// Check looks for identity want among d's usable entries and whether that
// entry's roots contain every certificate of wantRoots (by DER).
func (d Dump) Check(want string, wantRoots []*x509.Certificate) Check {
	var why []string
	for _, id := range d.Identities {
		if id.SPIFFE != want {
			continue
		}
		ok, reason := id.Usable()
		if !ok {
			why = append(why, reason)
			continue
		}
		c := Check{Found: true, RootsMatch: len(wantRoots) > 0}
		for _, r := range wantRoots {
			if !containsDER(id.Roots, r) {
				c.RootsMatch = false
			}
		}
		c.Detail = fmt.Sprintf("%s holds %s (%s, chain of %d, leaf serial %x); %d trusted root(s), %s",
			d.Proxy, want, id.Where, len(id.Chain), id.Chain[0].SerialNumber, len(id.Roots),
			map[bool]string{true: "the namespace's root among them", false: "NOT the namespace's root " + serials(wantRoots)}[c.RootsMatch])
		return c
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("no entry for it among %d: %s", len(d.Identities), d.names()))
	}
	return Check{Detail: fmt.Sprintf("%s does not hold %s usably: %s", d.Proxy, want, strings.Join(why, "; "))}
}

func (d Dump) names() string {
	var n []string
	for _, id := range d.Identities {
		n = append(n, id.SPIFFE)
	}
	return "[" + strings.Join(n, " ") + "]"
}

func containsDER(set []*x509.Certificate, c *x509.Certificate) bool {
	for _, s := range set {
		if bytes.Equal(s.Raw, c.Raw) {
			return true
		}
	}
	return false
}

func serials(cs []*x509.Certificate) string {
	var s []string
	for _, c := range cs {
		s = append(s, fmt.Sprintf("%x", c.SerialNumber))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// ParsePEM decodes every CERTIFICATE block of a PEM bundle (the
// istio-ca-root-cert ConfigMap's root-cert.pem, an SDS secret's bytes).
// A bundle without any certificate is an error.
func ParsePEM(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d of the PEM bundle: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM CERTIFICATE block in %d bytes (starting %q)", len(data), head(data))
	}
	return out, nil
}

func head(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// ztunnel's CertsDump and CertDump (src/admin.rs), as serde writes them.
type ztunnelConfigDump struct {
	Certificates *[]ztunnelCerts `json:"certificates"`
}

type ztunnelCerts struct {
	Identity  string        `json:"identity"`
	State     string        `json:"state"`
	CertChain []ztunnelCert `json:"certChain"`
	RootCerts []ztunnelCert `json:"rootCerts"`
}

type ztunnelCert struct {
	PEM            string `json:"pem"`
	SerialNumber   string `json:"serialNumber"`
	ValidFrom      string `json:"validFrom"`
	ExpirationTime string `json:"expirationTime"`
}

// ParseZtunnel reads ztunnel's /config_dump. Every certificate must decode
// (base64, then PEM, then X.509) and its serialNumber must be the decoded
// certificate's serial in decimal; anything else is an error naming the
// entry, since it means the dump is not what ztunnel 1.30 writes.
func ParseZtunnel(configDump []byte) (Dump, error) {
	var raw ztunnelConfigDump
	if err := json.Unmarshal(configDump, &raw); err != nil {
		return Dump{}, fmt.Errorf("ztunnel config_dump: %w", err)
	}
	if raw.Certificates == nil {
		return Dump{}, fmt.Errorf("ztunnel config_dump has no \"certificates\" section (got %d bytes starting %q); is this ztunnel's admin /config_dump?", len(configDump), head(configDump))
	}
	d := Dump{Proxy: "ztunnel"}
	for i, e := range *raw.Certificates {
		where := fmt.Sprintf("certificates[%d] (%s)", i, e.Identity)
		id := Identity{SPIFFE: e.Identity, State: e.State, Where: where}
		var err error
		if id.Chain, err = ztunnelChain(e.CertChain, where+".certChain"); err != nil {
			return Dump{}, err
		}
		if id.Roots, err = ztunnelChain(e.RootCerts, where+".rootCerts"); err != nil {
			return Dump{}, err
		}
		d.Identities = append(d.Identities, id)
	}
	return d, nil
}

func ztunnelChain(certs []ztunnelCert, where string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for i, c := range certs {
		at := fmt.Sprintf("%s[%d]", where, i)
		pemText, err := base64.StdEncoding.DecodeString(c.PEM)
		if err != nil {
			return nil, fmt.Errorf("%s.pem: not base64 (ztunnel writes the PEM base64-encoded): %w", at, err)
		}
		parsed, err := ParsePEM(pemText)
		if err != nil {
			return nil, fmt.Errorf("%s.pem: %w", at, err)
		}
		if len(parsed) != 1 {
			return nil, fmt.Errorf("%s.pem: %d certificates, ztunnel writes one per entry", at, len(parsed))
		}
		serial, ok := new(big.Int).SetString(c.SerialNumber, 10)
		if !ok || serial.Cmp(parsed[0].SerialNumber) != 0 {
			return nil, fmt.Errorf("%s.serialNumber %q is not the certificate's serial %s (decimal, as ztunnel writes it)", at, c.SerialNumber, parsed[0].SerialNumber)
		}
		out = append(out, parsed[0])
	}
	return out, nil
}

// envoyActive is the State of a secret in Envoy's dynamic_active_secrets.
const envoyActive = "active"

// SecretsConfigDumpType is the @type of the secrets section of Envoy's
// /config_dump.
const SecretsConfigDumpType = "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"

// The parts of envoy.admin.v3.ConfigDump / SecretsConfigDump and
// envoy.extensions.transport_sockets.tls.v3.Secret this package reads, in
// Envoy's JSON (proto field names preserved; bytes fields base64).
type envoyConfigDump struct {
	Configs []json.RawMessage `json:"configs"`
}

type envoySecretsDump struct {
	DynamicActiveSecrets []envoySecret `json:"dynamic_active_secrets"`
}

type envoySecret struct {
	Name   string `json:"name"`
	Secret struct {
		Name           string `json:"name"`
		TLSCertificate *struct {
			CertificateChain envoyDataSource `json:"certificate_chain"`
		} `json:"tls_certificate"`
		ValidationContext *struct {
			TrustedCA envoyDataSource `json:"trusted_ca"`
		} `json:"validation_context"`
	} `json:"secret"`
}

// envoyDataSource is config.core.v3.DataSource: istio-agent sends
// inline_bytes (base64 in JSON); inline_string is accepted too.
type envoyDataSource struct {
	InlineBytes  []byte `json:"inline_bytes"`
	InlineString string `json:"inline_string"`
	Filename     string `json:"filename"`
}

func (s envoyDataSource) pem(where string) ([]byte, error) {
	switch {
	case len(s.InlineBytes) > 0:
		return s.InlineBytes, nil
	case s.InlineString != "":
		return []byte(s.InlineString), nil
	case s.Filename != "":
		return nil, fmt.Errorf("%s: certificate in file %s, which the admin dump does not show", where, s.Filename)
	}
	return nil, nil
}

// ParseEnvoy reads the secrets section of Envoy's /config_dump. Each active
// secret holding a certificate chain becomes an Identity per SPIFFE URI SAN
// of its leaf; the roots are every trusted CA among the active secrets
// (istio-agent sends them as the separate secret ROOTCA). Warming secrets are
// not served and are not counted.
func ParseEnvoy(configDump []byte) (Dump, error) {
	var raw envoyConfigDump
	if err := json.Unmarshal(configDump, &raw); err != nil {
		return Dump{}, fmt.Errorf("envoy config_dump: %w", err)
	}
	var secrets *envoySecretsDump
	var types []string
	for _, c := range raw.Configs {
		var probe struct {
			Type string `json:"@type"`
		}
		if err := json.Unmarshal(c, &probe); err != nil {
			return Dump{}, fmt.Errorf("envoy config_dump: configs entry: %w", err)
		}
		types = append(types, probe.Type)
		if probe.Type == SecretsConfigDumpType {
			secrets = &envoySecretsDump{}
			if err := json.Unmarshal(c, secrets); err != nil {
				return Dump{}, fmt.Errorf("envoy config_dump: %s: %w", SecretsConfigDumpType, err)
			}
		}
	}
	if secrets == nil {
		return Dump{}, fmt.Errorf("envoy config_dump has no %s among its configs %v; is this Envoy's admin /config_dump?", SecretsConfigDumpType, types)
	}
	var roots []*x509.Certificate
	type chain struct {
		where string
		certs []*x509.Certificate
	}
	var chains []chain
	for i, s := range secrets.DynamicActiveSecrets {
		where := fmt.Sprintf("dynamic_active_secrets[%d] (%s)", i, s.Name)
		if vc := s.Secret.ValidationContext; vc != nil {
			p, err := vc.TrustedCA.pem(where + ".validation_context.trusted_ca")
			if err != nil {
				return Dump{}, err
			}
			if p != nil {
				cs, err := ParsePEM(p)
				if err != nil {
					return Dump{}, fmt.Errorf("%s.validation_context.trusted_ca: %w", where, err)
				}
				roots = append(roots, cs...)
			}
		}
		if tc := s.Secret.TLSCertificate; tc != nil {
			p, err := tc.CertificateChain.pem(where + ".tls_certificate.certificate_chain")
			if err != nil {
				return Dump{}, err
			}
			var cs []*x509.Certificate
			if p != nil {
				if cs, err = ParsePEM(p); err != nil {
					return Dump{}, fmt.Errorf("%s.tls_certificate.certificate_chain: %w", where, err)
				}
			}
			chains = append(chains, chain{where, cs})
		}
	}
	d := Dump{Proxy: "envoy"}
	for _, c := range chains {
		if len(c.certs) == 0 {
			d.Identities = append(d.Identities, Identity{State: envoyActive, Where: c.where, Roots: roots})
			continue
		}
		for _, u := range c.certs[0].URIs {
			if u.Scheme == "spiffe" {
				d.Identities = append(d.Identities, Identity{SPIFFE: u.String(), State: envoyActive, Chain: c.certs, Roots: roots, Where: c.where})
			}
		}
	}
	return d, nil
}
