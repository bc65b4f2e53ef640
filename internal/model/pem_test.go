package model

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/md5" //nolint:gosec // an MD5-signed certificate is a case to refuse
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/testutil"
)

// testCert is a generated certificate with its key.
type testCert struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (c testCert) certPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw}))
}

// pss reads a file of testdata/pss.
func pss(t testing.TB, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "pss", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// blankLineAt inserts an empty line before line n (0 is BEGIN) of text.
func blankLineAt(text string, n int) string {
	lines := strings.Split(text, "\n")
	return strings.Join(slices.Insert(lines, n, ""), "\n")
}

// foreignPublicKey is c's EC key with another key's public key in its
// public key field, as SEC 1, or wrapped in PKCS#8.
func foreignPublicKey(t testing.TB, c testCert, pkcs8 bool) string {
	type ecKey struct {
		Version    int
		PrivateKey []byte
		Curve      asn1.ObjectIdentifier `asn1:"optional,explicit,tag:0"`
		PublicKey  asn1.BitString        `asn1:"optional,explicit,tag:1"`
	}
	der, err := x509.MarshalECPrivateKey(c.key.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	var k ecKey
	if _, err := asn1.Unmarshal(der, &k); err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(c.key.(*ecdsa.PrivateKey).Curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := other.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	k.PublicKey = asn1.BitString{Bytes: pub.Bytes(), BitLength: 8 * len(pub.Bytes())}
	if der, err = asn1.Marshal(k); err != nil {
		t.Fatal(err)
	}
	if !pkcs8 {
		return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	}
	p8, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Version    int
		Algorithm  pkix.AlgorithmIdentifier
		PrivateKey []byte
	}
	if _, err := asn1.Unmarshal(p8, &w); err != nil {
		t.Fatal(err)
	}
	// The inner key without its curve, as PKCS#8 writes it.
	k.Curve = nil
	if w.PrivateKey, err = asn1.Marshal(k); err != nil {
		t.Fatal(err)
	}
	if p8, err = asn1.Marshal(w); err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}))
}

// sec1 is c's EC key as an "EC PRIVATE KEY" block.
func sec1(t testing.TB, c testCert) string {
	der, err := x509.MarshalECPrivateKey(c.key.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

// relabel writes the one block of keyPEM under label.
func relabel(t testing.TB, keyPEM, label string) string {
	b, _ := pem.Decode([]byte(keyPEM))
	if b == nil {
		t.Fatal("no PEM block")
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: label, Bytes: b.Bytes}))
}

func (c testCert) keyPEM(t testing.TB) string {
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// certSpec describes a certificate to make; a nil parent makes it
// self-signed.
type certSpec struct {
	cn       string
	key      crypto.Signer
	parent   *testCert
	ca       bool
	sig      x509.SignatureAlgorithm // zero: Go's choice for the key
	notAfter time.Time               // zero: 2100
}

var serial int64

func makeCert(t testing.TB, s certSpec) testCert {
	t.Helper()
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:       big.NewInt(serial),
		Subject:            pkix.Name{CommonName: s.cn},
		DNSNames:           []string{s.cn},
		NotBefore:          time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:           s.notAfter,
		SignatureAlgorithm: s.sig,
		KeyUsage:           x509.KeyUsageDigitalSignature,
		ExtKeyUsage:        []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if s.ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.DNSNames, tmpl.ExtKeyUsage = nil, nil
	}
	parent, signer := tmpl, s.key
	if s.parent != nil {
		parent, signer = s.parent.cert, s.parent.key
	}
	md5Wanted := s.sig == x509.MD5WithRSA
	if md5Wanted {
		tmpl.SignatureAlgorithm = x509.SHA256WithRSA // re-signed below: Go does not sign with MD5
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, s.key.Public(), signer)
	if err != nil {
		t.Fatalf("create %s: %v", s.cn, err)
	}
	if md5Wanted {
		der = resignWithMD5(t, der, signer.(*rsa.PrivateKey))
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse %s: %v", s.cn, err)
	}
	return testCert{cert: c, key: s.key}
}

// resignWithMD5 turns a SHA256WithRSA certificate into an MD5WithRSA one
// signed by the same key: the two algorithm identifiers differ in their
// last byte only.
func resignWithMD5(t testing.TB, der []byte, key *rsa.PrivateKey) []byte {
	t.Helper()
	var c struct {
		TBS asn1.RawValue
		Alg pkix.AlgorithmIdentifier
		Sig asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &c); err != nil {
		t.Fatal(err)
	}
	sha256RSA := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b}
	md5RSA := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x04}
	tbs := bytes.Replace(c.TBS.FullBytes, sha256RSA, md5RSA, 1)
	sum := md5.Sum(tbs) //nolint:gosec
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.MD5, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	c.TBS = asn1.RawValue{FullBytes: tbs}
	c.Alg.Algorithm = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 4}
	c.Sig = asn1.BitString{Bytes: sig, BitLength: 8 * len(sig)}
	out, err := asn1.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// certZoo is the material of the certificate cases, made once per test
// binary (RSA keys take a while).
type certZoo struct {
	root, otherRoot, inter, sha1Inter, ca1024, sha1Root  testCert
	leafByRoot, leafByInter, leafBySHA1Inter, leafBy1024 testCert
	sha1Leaf, md5Leaf, sha1SelfSigned                    testCert
	selfEC, selfRSA, rsa1024, p224, p384, ed, expired    testCert
	rsa1024Key                                           crypto.Signer
}

var (
	zooOnce sync.Once
	zoo     certZoo
)

func certificates(t testing.TB) *certZoo {
	zooOnce.Do(func() { zoo = makeZoo(t) })
	return &zoo
}

func makeZoo(t testing.TB) certZoo {
	rsaKey := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	ecKey := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rootKey, leafRSAKey, small := rsaKey(2048), rsaKey(2048), rsaKey(1024)
	p256 := ecKey(elliptic.P256())

	var z certZoo
	z.rsa1024Key = rsaKey(1024)
	z.root = makeCert(t, certSpec{cn: "Root CA", key: rootKey, ca: true})
	z.otherRoot = makeCert(t, certSpec{cn: "Other CA", key: ecKey(elliptic.P256()), ca: true})
	z.inter = makeCert(t, certSpec{cn: "Intermediate CA", key: ecKey(elliptic.P256()), parent: &z.root, ca: true})
	z.sha1Inter = makeCert(t, certSpec{cn: "SHA-1 Intermediate CA", key: ecKey(elliptic.P256()), parent: &z.root, ca: true, sig: x509.SHA1WithRSA})
	z.ca1024 = makeCert(t, certSpec{cn: "Small CA", key: small, ca: true})
	z.sha1Root = makeCert(t, certSpec{cn: "SHA-1 Root CA", key: rootKey, ca: true, sig: x509.SHA1WithRSA})
	z.leafByRoot = makeCert(t, certSpec{cn: "root.example.com", key: p256, parent: &z.root})
	z.leafByInter = makeCert(t, certSpec{cn: "inter.example.com", key: leafRSAKey, parent: &z.inter})
	z.leafBySHA1Inter = makeCert(t, certSpec{cn: "sha1inter.example.com", key: p256, parent: &z.sha1Inter})
	z.leafBy1024 = makeCert(t, certSpec{cn: "small-ca.example.com", key: p256, parent: &z.ca1024})
	z.sha1Leaf = makeCert(t, certSpec{cn: "sha1.example.com", key: p256, parent: &z.root, sig: x509.SHA1WithRSA})
	z.md5Leaf = makeCert(t, certSpec{cn: "md5.example.com", key: p256, parent: &z.root, sig: x509.MD5WithRSA})
	z.sha1SelfSigned = makeCert(t, certSpec{cn: "sha1-self.example.com", key: leafRSAKey, sig: x509.SHA1WithRSA})
	z.selfEC = makeCert(t, certSpec{cn: "ec.example.com", key: p256})
	z.selfRSA = makeCert(t, certSpec{cn: "rsa.example.com", key: leafRSAKey})
	z.rsa1024 = makeCert(t, certSpec{cn: "rsa1024.example.com", key: small})
	z.p224 = makeCert(t, certSpec{cn: "p224.example.com", key: ecKey(elliptic.P224())})
	z.p384 = makeCert(t, certSpec{cn: "p384.example.com", key: ecKey(elliptic.P384())})
	z.ed = makeCert(t, certSpec{cn: "ed25519.example.com", key: edKey})
	z.expired = makeCert(t, certSpec{cn: "expired.example.com", key: p256, notAfter: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)})
	return z
}

// certCase is one piece of TLS material, judged by haroute (want: the exact
// diagnostics, none when admitted) and by `haproxy -c` in
// TestCertificatesAgainstHAProxy.
type certCase struct {
	name string
	// Exactly one of route, bundle and caFile is set: a route's TLS
	// fields, a crt bundle (RouterConfig defaultCertificate) or a CA file
	// (RouterConfig defaultDestinationCA).
	route  *TLSConfig
	bundle string
	caFile string
	want   []string
	// policy marks a rejection of haroute's (OpenShift's) that HAProxy
	// 2.6 does not make at load time: `haproxy -c` must accept the case.
	policy string
}

// truncatedChain explains refusing a damaged block after the leaf: HAProxy
// 2.6 stops reading the chain at any PEM error there and serves what it
// read so far (ssl_ckch.c tests ERR_GET_LIB != PEM && reason !=
// NO_START_LINE), so the file loads with its chain silently cut short.
const truncatedChain = "HAProxy silently cuts the chain at a damaged block after the leaf"

const (
	headerInjected = "-----BEGIN CERTIFICATE-----\nFoo: bar\n\n"
	procType       = "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\n"
	damagedBlock   = "-----BEGIN CERTIFICATE-----\nMIIB*not*base64\n-----END CERTIFICATE-----\n"
	// RFC 7919's ffdhe2048, as `openssl genpkey -genparam -algorithm DH
	// -pkeyopt group:ffdhe2048` writes it.
	dhParams = "-----BEGIN DH PARAMETERS-----\n" +
		"MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz\n" +
		"+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a\n" +
		"87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7\n" +
		"YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi\n" +
		"7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD\n" +
		"ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==\n" +
		"-----END DH PARAMETERS-----\n"
)

func certCases(t testing.TB) []certCase {
	z := certificates(t)
	k := func(c testCert) string { return c.keyPEM(t) }
	edge := func(cert, key, ca string) *TLSConfig {
		return &TLSConfig{Termination: TerminationEdge, Certificate: cert, Key: key, CACertificate: ca}
	}
	reencrypt := func(destCA string) *TLSConfig {
		return &TLSConfig{Termination: TerminationReencrypt, Certificate: z.selfEC.certPEM(), Key: k(z.selfEC), DestinationCACertificate: destCA}
	}
	const pre = "ns-r.yaml:"
	return []certCase{
		// Keys HAProxy serves.
		{name: "self-signed EC P-256", route: edge(z.selfEC.certPEM(), k(z.selfEC), "")},
		{name: "self-signed RSA 2048", route: edge(z.selfRSA.certPEM(), k(z.selfRSA), "")},
		{name: "self-signed EC P-224", route: edge(z.p224.certPEM(), k(z.p224), "")},
		{name: "self-signed EC P-384", route: edge(z.p384.certPEM(), k(z.p384), "")},
		{name: "self-signed Ed25519", route: edge(z.ed.certPEM(), k(z.ed), "")},
		{name: "RSA 1024 certificate", route: edge(z.rsa1024.certPEM(), k(z.rsa1024), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 1 (subject "CN=rsa1024.example.com") has a 1024-bit RSA key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
		}},
		{name: "RSA 1024 key for an RSA 2048 certificate", route: edge(z.selfRSA.certPEM(), testCert{key: z.rsa1024Key}.keyPEM(t), ""), want: []string{
			pre + `19:7: error: spec.tls.key: key block 1 has a 1024-bit RSA key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
		}},
		// Key blocks under a label that does not fit their content, which
		// OpenShift's router writes back under the right one.
		{name: "SEC 1 EC key in a PRIVATE KEY block", route: edge(z.selfEC.certPEM(), relabel(t, sec1(t, z.selfEC), "PRIVATE KEY"), ""), want: []string{
			pre + `19:7: note: spec.tls.key: key block 1 is labelled "PRIVATE KEY" but is read as "EC PRIVATE KEY", as OpenShift reads it`,
		}},
		{name: "EC key in an ECDSA PRIVATE KEY block", route: edge(z.selfEC.certPEM(), relabel(t, sec1(t, z.selfEC), "ECDSA PRIVATE KEY"), ""), want: []string{
			pre + `19:7: note: spec.tls.key: key block 1 is labelled "ECDSA PRIVATE KEY" but is read as "EC PRIVATE KEY", as OpenShift reads it`,
		}},
		{name: "PKCS#8 key in an RSA PRIVATE KEY block", route: edge(z.selfRSA.certPEM(), relabel(t, k(z.selfRSA), "RSA PRIVATE KEY"), ""), want: []string{
			pre + `19:7: note: spec.tls.key: key block 1 is labelled "RSA PRIVATE KEY" but is read as "PRIVATE KEY", as OpenShift reads it`,
		}},
		// OpenSSL takes the public key an EC key carries; Go derives it.
		{name: "EC key carrying another key's public key", route: edge(z.selfEC.certPEM(), foreignPublicKey(t, z.selfEC, false), ""), want: []string{
			pre + `19:7: note: spec.tls.key: key block 1 carries a public key that is not its own, which OpenSSL would take; it is written with its own, as OpenShift's router writes keys`,
		}},
		{name: "PKCS#8 EC key carrying another key's public key", route: edge(z.selfEC.certPEM(), foreignPublicKey(t, z.selfEC, true), ""), want: []string{
			pre + `19:7: note: spec.tls.key: key block 1 carries a public key that is not its own, which OpenSSL would take; it is written with its own, as OpenShift's router writes keys`,
		}},
		{name: "key of another certificate", route: edge(z.selfRSA.certPEM(), k(z.selfEC), ""), want: []string{
			pre + `19:7: error: spec.tls.key: key does not match the certificate (subject "CN=rsa.example.com")`,
		}},
		{name: "chain in the wrong order: issuer first", route: edge(z.inter.certPEM()+z.leafByInter.certPEM(), k(z.leafByInter), ""), want: []string{
			pre + `19:7: error: spec.tls.key: key does not match the first certificate (subject "CN=Intermediate CA") but certificate 2 of the chain (subject "CN=inter.example.com"): the certificate the key belongs to must come first, then its issuers`,
		}},
		{name: "expired self-signed (OpenShift serves it)", route: edge(z.expired.certPEM(), k(z.expired), "")},

		// Chains and caCertificate.
		{name: "leaf signed by caCertificate", route: edge(z.leafByRoot.certPEM(), k(z.leafByRoot), z.root.certPEM())},
		{name: "leaf and intermediate, root caCertificate", route: edge(z.leafByInter.certPEM()+z.inter.certPEM(), k(z.leafByInter), z.root.certPEM())},
		{name: "leaf, intermediate and root in caCertificate", route: edge(z.leafByInter.certPEM(), k(z.leafByInter), z.inter.certPEM()+z.root.certPEM())},
		{name: "caCertificate did not sign the certificate", route: edge(z.leafByRoot.certPEM(), k(z.leafByRoot), z.otherRoot.certPEM()),
			policy: "OpenShift verifies the certificate against caCertificate", want: []string{
				pre + `18:7: error: spec.tls.certificate: certificate (subject "CN=root.example.com", issuer "CN=Root CA") is not signed by caCertificate, directly or through the chain in certificate`,
			}},
		{name: "intermediate missing between leaf and caCertificate", route: edge(z.leafByInter.certPEM(), k(z.leafByInter), z.root.certPEM()),
			policy: "OpenShift verifies the certificate against caCertificate", want: []string{
				pre + `18:7: error: spec.tls.certificate: certificate (subject "CN=inter.example.com", issuer "CN=Intermediate CA") is not signed by caCertificate, directly or through the chain in certificate`,
			}},
		{name: "RSA 1024 CA in the chain", route: edge(z.leafBy1024.certPEM(), k(z.leafBy1024), z.ca1024.certPEM()), want: []string{
			pre + `20:7: error: spec.tls.caCertificate: caCertificate block 1 (subject "CN=Small CA") has a 1024-bit RSA key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
		}},
		{name: "leaf signed by an RSA 1024 CA not in the file", route: edge(z.leafBy1024.certPEM(), k(z.leafBy1024), "")},
		{name: "leaf signed with SHA-1 by a CA", route: edge(z.sha1Leaf.certPEM(), k(z.sha1Leaf), z.root.certPEM()), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 1 (subject "CN=sha1.example.com") is signed by its issuer with SHA1-RSA: SHA-1 and MD5 signatures are refused ("ca md too weak"), except on self-signed certificates`,
		}},
		{name: "leaf signed with MD5 by a CA", route: edge(z.md5Leaf.certPEM(), k(z.md5Leaf), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 1 (subject "CN=md5.example.com") is signed by its issuer with MD5-RSA: SHA-1 and MD5 signatures are refused ("ca md too weak"), except on self-signed certificates`,
		}},
		{name: "intermediate signed with SHA-1 in the chain", route: edge(z.leafBySHA1Inter.certPEM()+z.sha1Inter.certPEM(), k(z.leafBySHA1Inter), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 2 (subject "CN=SHA-1 Intermediate CA") is signed by its issuer with SHA1-RSA: SHA-1 and MD5 signatures are refused ("ca md too weak"), except on self-signed certificates`,
		}},
		{name: "self-signed SHA-1 leaf", route: edge(z.sha1SelfSigned.certPEM(), k(z.sha1SelfSigned), "")},
		{name: "self-signed SHA-1 root as caCertificate", route: edge(z.leafByRoot.certPEM(), k(z.leafByRoot), z.sha1Root.certPEM())},

		// Keys and signatures Go's x509 does not know (testdata/pss).
		{name: "leaf signed by a 2048-bit RSA-PSS caCertificate", route: edge(pss(t, "leaf-by-pss2048.pem"), pss(t, "leaf.pkcs8.key"), pss(t, "pss2048-ca.pem"))},
		{name: "1024-bit RSA-PSS CA in the chain", route: edge(pss(t, "leaf-by-pss1024.pem")+pss(t, "pss1024-ca.pem"), pss(t, "leaf.pkcs8.key"), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 2 (subject "CN=pss1024-ca") has a 1024-bit RSA-PSS key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
		}},
		{name: "leaf signed with RSA-PSS over SHA-1", route: edge(pss(t, "leaf-pss-sha1.pem"), pss(t, "leaf.pkcs8.key"), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 1 (subject "CN=www.example.com") is signed by its issuer with RSA-PSS over SHA-1 or MD5: such signatures are refused ("ca md too weak"), except on self-signed certificates`,
		}},
		{name: "brainpool certificate", route: edge(pss(t, "brainpool-self.pem"), pss(t, "brainpool.key"), ""),
			policy: "Go cannot read the curve, so haroute cannot judge the material", want: []string{
				"ns-r.yaml:18:7: error: spec.tls.certificate: certificate block 1 does not parse as a certificate: its elliptic curve is not one haroute supports (brainpool and secp256k1 are not): use P-256, P-384 or P-521 (x509: unsupported elliptic curve)"}},
		{name: "RSA-PSS private key", route: edge(pss(t, "pss-self.pem"), pss(t, "pss2048.key"), ""),
			policy: "Go cannot read RSA-PSS private keys, so haroute cannot judge the material", want: []string{
				"ns-r.yaml:19:7: error: spec.tls.key: key block 1: does not parse as a PKCS#8 key: it is an RSA-PSS key, which haroute does not support: use an RSA (rsaEncryption), ECDSA or Ed25519 key (x509: PKCS#8 wrapping contained private key with unknown algorithm: 1.2.840.113549.1.1.10)"}},
		{name: "reencrypt to backends of a 1024-bit RSA-PSS CA", route: reencrypt(pss(t, "pss1024-ca.pem")), policy: "OpenSSL refuses to verify a chain with a key under 2048 bits: every backend would answer 503", want: []string{
			pre + `21:7: error: spec.tls.destinationCACertificate: destinationCACertificate block 1 (subject "CN=pss1024-ca") has a 1024-bit RSA-PSS key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
		}},

		// PEM structure.
		{name: "blank line inside the certificate's base64", route: edge(blankLineAt(z.selfEC.certPEM(), 3), k(z.selfEC), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate is not valid PEM: block 1 has a blank line inside its base64, where OpenSSL stops reading`,
		}},
		{name: "blank line before END", route: edge(blankLineAt(z.selfEC.certPEM(), strings.Count(z.selfEC.certPEM(), "\n")-1), k(z.selfEC), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate is not valid PEM: block 1 has a blank line inside its base64, where OpenSSL stops reading`,
		}},
		{name: "blank line inside the key's base64", route: edge(z.selfRSA.certPEM(), blankLineAt(k(z.selfRSA), 4), ""), want: []string{
			pre + `19:7: error: spec.tls.key: key is not valid PEM: block 1 has a blank line inside its base64, where OpenSSL stops reading`,
		}},
		{name: "blank line inside the chain's base64", route: edge(z.leafByInter.certPEM()+blankLineAt(z.inter.certPEM(), 2), k(z.leafByInter), ""), policy: "HAProxy drops the chain from the blank line on, and serves the leaf alone", want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate is not valid PEM: block 2 has a blank line inside its base64, where OpenSSL stops reading`,
		}},
		{name: "blank line right after BEGIN", route: edge(blankLineAt(z.selfEC.certPEM(), 1), k(z.selfEC), "")},
		{name: "header line in the certificate block", route: edge(strings.Replace(z.selfEC.certPEM(), "-----BEGIN CERTIFICATE-----\n", headerInjected, 1), k(z.selfEC), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 1 has PEM headers (Foo): OpenSSL refuses them outside encrypted keys`,
		}},
		{name: "Proc-Type header in the certificate block", route: edge(strings.Replace(z.selfEC.certPEM(), "-----BEGIN CERTIFICATE-----\n", procType, 1), k(z.selfEC), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate block 1 has PEM headers (DEK-Info, Proc-Type): OpenSSL refuses them outside encrypted keys`,
		}},
		{name: "damaged block before a good one", route: edge(damagedBlock+z.selfEC.certPEM(), k(z.selfEC), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate is not valid PEM: block 1 does not decode (damaged base64 or missing END line)`,
		}},
		{name: "damaged block after the CA", route: edge(z.leafByRoot.certPEM(), k(z.leafByRoot), z.root.certPEM()+damagedBlock), policy: truncatedChain, want: []string{
			pre + `20:7: error: spec.tls.caCertificate: caCertificate is not valid PEM: block 2 does not decode (damaged base64 or missing END line)`,
		}},
		{name: "END line missing", route: edge(strings.TrimSuffix(z.selfEC.certPEM(), "-----END CERTIFICATE-----\n"), k(z.selfEC), ""), want: []string{
			pre + `18:7: error: spec.tls.certificate: certificate is not valid PEM: a block does not decode (damaged base64 or missing END line)`,
		}},
		{name: "commentary around blocks", route: edge("subject=CN = ec.example.com\n"+z.selfEC.certPEM()+"trailing words\n", k(z.selfEC), "")},
		{name: "CRLF line ends", route: edge(strings.ReplaceAll(z.selfEC.certPEM(), "\n", "\r\n"), strings.ReplaceAll(k(z.selfEC), "\n", "\r\n"), "")},
		{name: "unknown block type in the certificate", route: edge(z.selfEC.certPEM()+"-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n", k(z.selfEC), ""),
			policy: "fields hold certificates only, as OpenShift's sanitizer requires", want: []string{
				pre + `18:7: error: spec.tls.certificate: certificate block 2 is "X509 CRL", not CERTIFICATE`,
			}},

		// destinationCACertificate: a server's ca-file.
		{name: "destination CA", route: reencrypt(z.root.certPEM() + z.inter.certPEM())},
		{name: "destination CA with RSA 1024", route: reencrypt(z.ca1024.certPEM()),
			policy: "OpenSSL (level 2) checks the trust anchor key when it verifies a backend: every handshake would fail", want: []string{
				pre + `21:7: error: spec.tls.destinationCACertificate: destinationCACertificate block 1 (subject "CN=Small CA") has a 1024-bit RSA key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
			}},
		{name: "destination CA signed with SHA-1", route: reencrypt(z.sha1Inter.certPEM()),
			policy: "OpenShift refuses CA-signed SHA-1 destination CAs: verification would fail", want: []string{
				pre + `21:7: error: spec.tls.destinationCACertificate: destinationCACertificate block 1 (subject "CN=SHA-1 Intermediate CA") is signed by its issuer with SHA1-RSA: SHA-1 and MD5 signatures are refused ("ca md too weak"), except on self-signed certificates`,
			}},
		{name: "destination CA with a header line", route: reencrypt(strings.Replace(z.root.certPEM(), "-----BEGIN CERTIFICATE-----\n", headerInjected, 1)), want: []string{
			pre + `21:7: error: spec.tls.destinationCACertificate: destinationCACertificate block 1 has PEM headers (Foo): OpenSSL refuses them outside encrypted keys`,
		}},
		{name: "destination CA after a damaged block", route: reencrypt(damagedBlock + z.root.certPEM()), want: []string{
			pre + `21:7: error: spec.tls.destinationCACertificate: destinationCACertificate is not valid PEM: block 1 does not decode (damaged base64 or missing END line)`,
		}},

		// RouterConfig defaultCertificate: a crt bundle.
		{name: "bundle: key before certificate and chain", bundle: k(z.leafByInter) + z.leafByInter.certPEM() + z.inter.certPEM()},
		{name: "bundle: not PEM", bundle: "root:*:19000:0:99999:7:::\n", want: []string{"contains no PEM CERTIFICATE block"}},
		{name: "bundle: DH parameters after the key", bundle: z.selfEC.certPEM() + k(z.selfEC) + dhParams,
			policy: "a bundle holds a certificate chain and its key; HAProxy would read DH parameters from it", want: []string{
				"block 3 is DH PARAMETERS: only CERTIFICATE and PRIVATE KEY blocks belong here"}},
		{name: "bundle: no key", bundle: z.selfEC.certPEM(), want: []string{"contains no private key: it needs the certificate chain and its key"}},
		{name: "bundle: EC key carrying another key's public key", bundle: z.selfEC.certPEM() + foreignPublicKey(t, z.selfEC, false), want: []string{"key block 2: carries a public key that is not its own, which OpenSSL would take"}},
		{name: "bundle: RSA 1024", bundle: z.rsa1024.certPEM() + k(z.rsa1024), want: []string{
			`block 1 (subject "CN=rsa1024.example.com") has a 1024-bit RSA key: OpenSSL (security level 2) refuses keys under 2048 bits ("key too small")`,
		}},
		{name: "bundle: damaged block at the end", bundle: z.selfEC.certPEM() + k(z.selfEC) + damagedBlock, policy: truncatedChain, want: []string{
			"is not valid PEM: block 3 does not decode (damaged base64 or missing END line)",
		}},
		{name: "bundle: header in the key", bundle: z.selfEC.certPEM() + strings.Replace(k(z.selfEC), "-----BEGIN PRIVATE KEY-----\n", "-----BEGIN PRIVATE KEY-----\nFoo: bar\n\n", 1),
			policy: "headers are refused in every block: OpenSSL 3's key decoder happens to skip them, its certificate reader does not", want: []string{
				"key block 2 has PEM headers (Foo): OpenSSL refuses them outside encrypted keys",
			}},
		{name: "bundle: SHA-1 intermediate", bundle: z.leafBySHA1Inter.certPEM() + z.sha1Inter.certPEM() + k(z.leafBySHA1Inter), want: []string{
			`block 2 (subject "CN=SHA-1 Intermediate CA") is signed by its issuer with SHA1-RSA: SHA-1 and MD5 signatures are refused ("ca md too weak"), except on self-signed certificates`,
		}},

		// RouterConfig defaultDestinationCA: a CA file.
		{name: "CA file", caFile: z.root.certPEM()},
		{name: "CA file: not PEM", caFile: "hello\n", want: []string{"contains no PEM CERTIFICATE block"}},
		{name: "CA file: damaged block", caFile: z.root.certPEM() + damagedBlock, want: []string{
			"is not valid PEM: block 2 does not decode (damaged base64 or missing END line)",
		}},
	}
}

// judge returns haroute's diagnostics for the case, as TestCertificateCases
// compares them.
// served is the TLS material haroute renders for an admitted route case,
// or the case's own when haroute rejects it: what HAProxy must then refuse.
func (tc certCase) served() *TLSConfig {
	r := testRoute("ns", "r", "www.example.com")
	r.Spec.TLS = tc.route
	s := DefaultSettings()
	ar, c := validateRoute(&r, &s)
	if c.bad {
		return tc.route
	}
	return &TLSConfig{Certificate: ar.TLS.Certificate, Key: ar.TLS.Key, CACertificate: ar.TLS.CACertificate, DestinationCACertificate: ar.TLS.DestinationCACertificate}
}

func (tc certCase) judge() []string {
	var err error
	switch {
	case tc.route != nil:
		r := testRoute("ns", "r", "www.example.com")
		r.Spec.TLS = tc.route
		s := DefaultSettings()
		_, c := validateRoute(&r, &s)
		return lines(c.diags)
	case tc.bundle != "":
		err = CheckCertificateBundle([]byte(tc.bundle))
	default:
		err = CheckCABundle([]byte(tc.caFile))
	}
	if err != nil {
		return []string{err.Error()}
	}
	return nil
}

// TestCertificateCases asserts the exact diagnostic haroute gives for each
// piece of hostile (or fine) TLS material.
func TestCertificateCases(t *testing.T) {
	for _, tc := range certCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.judge()
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("diagnostics:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "))
			}
		})
	}
}

// TestCertificatesAgainstHAProxy loads every case into the real HAProxy
// (`haproxy -c`) the way render writes it: a route's certificate, key and
// caCertificate, in that order, as a `bind … ssl crt` file, its
// destinationCACertificate as a server's ca-file. haroute must reject
// exactly what HAProxy refuses, plus the policy cases, which HAProxy must
// accept (so the list stays honest). The cases are 2.6's (the floor); a
// newer HAProxy accepts more (3.0.11 with OpenSSL 3.5 loads SHA-1 and MD5
// signed chains, and refuses rather than cuts a damaged block at the
// end), so there only the guarantee is checked: what haroute admits,
// HAProxy loads.
func TestCertificatesAgainstHAProxy(t *testing.T) {
	bin := testutil.HAProxy(t)
	version, err := haproxy.BinaryVersion(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	exact := version == haproxy.Version{Major: 2, Minor: 6}
	dir := t.TempDir()
	for i, tc := range certCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := haproxyConfigFor(t, filepath.Join(dir, fmt.Sprint(i)), tc)
			err := haproxy.Check(context.Background(), bin, cfg)
			var refused *haproxy.CheckError
			if err != nil && !errors.As(err, &refused) {
				t.Fatalf("haproxy -c did not run: %v", err)
			}
			// A refusal must be about the material, not the harness.
			if refused != nil && !strings.Contains(err.Error(), ".pem") {
				t.Fatalf("haproxy -c refused something other than the PEM files: %v", err)
			}
			rejects := false
			for _, d := range tc.judge() {
				rejects = rejects || tc.route == nil || strings.Contains(d, ": error: ")
			}
			switch {
			case refused != nil && !rejects:
				t.Errorf("haroute admits what haproxy -c %v refuses: %v", version, err)
			case !exact:
			case tc.policy != "" && (refused != nil || !rejects):
				t.Errorf("policy case: haroute rejects = %v (want true), haproxy -c refuses = %v (want false): %v", rejects, refused != nil, err)
			case tc.policy == "" && rejects != (refused != nil):
				t.Errorf("haroute rejects = %v, haproxy -c refuses = %v: %v", rejects, refused != nil, err)
			}
			t.Logf("haroute %s, haproxy -c %s%s", verdict(rejects), verdict(refused != nil), policyNote(tc.policy))
			if refused != nil {
				t.Logf("haproxy: %s", strings.Join(refused.Lines, "; "))
			}
		})
	}
}

func verdict(rejected bool) string {
	if rejected {
		return "rejects"
	}
	return "accepts"
}

func policyNote(policy string) string {
	if policy == "" {
		return ""
	}
	return " (policy: " + policy + ")"
}

// haproxyConfigFor writes the case's files under dir and a configuration
// loading them, and returns its path.
func haproxyConfigFor(t *testing.T, dir string, tc certCase) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, parts ...string) string {
		var b strings.Builder
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" { // as render's joinPEM
				b.WriteString(p + "\n")
			}
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bind, server := "  bind 127.0.0.1:8443", "  server s1 127.0.0.1:1"
	switch {
	case tc.route != nil:
		tls := tc.served()
		bind += " ssl crt " + write("route.pem", tls.Certificate, tls.Key, tls.CACertificate)
		if tls.DestinationCACertificate != "" {
			server += " ssl verify required ca-file " + write("dest-ca.pem", tls.DestinationCACertificate)
		}
	case tc.bundle != "":
		bind += " ssl crt " + write("default.pem", tc.bundle)
	default:
		server += " ssl verify required ca-file " + write("ca.pem", tc.caFile)
	}
	cfg := strings.Join([]string{
		"defaults",
		"  mode http",
		"  timeout connect 1s",
		"  timeout client 1s",
		"  timeout server 1s",
		"frontend fe",
		bind,
		"  default_backend be",
		"backend be",
		server,
		"",
	}, "\n")
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
