package model

import (
	"bytes"
	"crypto"
	//lint:ignore SA1019 DSA certificates are parsed to be refused, not used
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PEM material is judged here as OpenSSL 3 and HAProxy 2.6 will judge it,
// so that a certificate `check` admits is one `haproxy -c` loads: a bad
// certificate then rejects its own route, while one that reached HAProxy
// would fail the reload for every route. On top of what OpenSSL refuses,
// the rules OpenShift's router applies at admission are applied too
// (openshift/router pkg/router/routeapihelpers/validation.go).
//
// Expiry is not judged, as OpenShift does not judge it: an expired
// certificate is still served and the client decides. (model has no
// clock either, and its results are memoized per route object.) Those
// that tell the time read it with CertificateNotAfter.

// minRSABits is the smallest RSA (or DSA) key OpenSSL accepts at security
// level 2, Debian's default: smaller ones fail with "ee key too small" for
// the served certificate and "ca key too small" for chain certificates.
const minRSABits = 2048

// minECBits is the smallest elliptic curve level 2 allows (112-bit
// security). Go parses only the NIST curves, all at or above it, so this
// guards against the parser growing, not a case seen today.
const minECBits = 224

// looksLikePEM tells inline PEM from a file path in RouterConfig fields that
// accept either.
func looksLikePEM(s string) bool { return strings.Contains(s, "-----BEGIN") }

// numberedBlock is a decoded PEM block and its 1-based place in the text it
// came from, which messages cite.
type numberedBlock struct {
	*pem.Block
	n int
}

// pemStart begins every PEM block; OpenSSL looks for it at line starts.
const pemStart = "-----BEGIN"

// pemBlocks decodes every PEM block in text as OpenSSL reads them. Text
// outside blocks (comments, `openssl x509 -text` output) is skipped, as
// OpenSSL skips it, but every line starting a block must start a whole,
// decodable one. Go's pem.Decode alone would pass over a damaged block
// and go on to the next, which HAProxy does not: it refuses the file.
func pemBlocks(text string) ([]numberedBlock, error) {
	var blocks []numberedBlock
	start := nextBlockStart(text, 0)
	for start >= 0 {
		end := nextBlockStart(text, start+1)
		segment := text[start:]
		if end >= 0 {
			segment = text[start:end]
		}
		// The segment holds one BEGIN line, so Decode cannot skip to a
		// later block: nil means this one is damaged.
		b, _ := pem.Decode([]byte(segment))
		if b == nil {
			if len(blocks) == 0 && end < 0 {
				return nil, errors.New("is not valid PEM: a block does not decode (damaged base64 or missing END line)")
			}
			return nil, fmt.Errorf("is not valid PEM: block %d does not decode (damaged base64 or missing END line)", len(blocks)+1)
		}
		if blankLineInBase64(segment) {
			return nil, fmt.Errorf("is not valid PEM: block %d has a blank line inside its base64, where OpenSSL stops reading", len(blocks)+1)
		}
		blocks = append(blocks, numberedBlock{Block: b, n: len(blocks) + 1})
		start = end
	}
	return blocks, nil
}

// blankLineInBase64 reports whether the block that segment begins with has
// a blank (or whitespace-only) line between its base64 lines, or between
// them and END. Go's decoder skips such a line; OpenSSL ends the data
// there and refuses the block, or, in a chain, drops it and what follows.
// One blank line may end the headers, or stand where they would be.
func blankLineInBase64(segment string) bool {
	lines := strings.Split(segment, "\n")
	i := 1 // after BEGIN
	for j := 1; j < len(lines); j++ {
		if strings.Contains(lines[j], ":") && !strings.HasPrefix(lines[j], "-----") {
			continue // a header line: the blank line after it is the separator
		}
		if strings.TrimSpace(lines[j]) == "" {
			i = j + 1
		} else {
			i = j
		}
		break
	}
	for ; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "-----END") {
			return false
		}
		if line == "" {
			return true
		}
	}
	return false
}

// nextBlockStart returns the index of the first line at or after from that
// begins a PEM block, or -1.
func nextBlockStart(text string, from int) int {
	for from < len(text) {
		i := strings.Index(text[from:], pemStart)
		if i < 0 {
			return -1
		}
		i += from
		if i == 0 || text[i-1] == '\n' {
			return i
		}
		from = i + 1
	}
	return -1
}

// headerProblem refuses PEM headers ("Proc-Type: …", "Foo: bar" lines after
// BEGIN). Go's decoder accepts any; OpenSSL takes only Proc-Type and
// DEK-Info, for encrypted keys, which HAProxy cannot decrypt anyway.
func headerProblem(b numberedBlock) error {
	if len(b.Headers) == 0 {
		return nil
	}
	names := make([]string, 0, len(b.Headers))
	for k := range b.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	return fmt.Errorf("block %d has PEM headers (%s): OpenSSL refuses them outside encrypted keys", b.n, strings.Join(names, ", "))
}

// parseCertificates returns the certificates in text, leaf first, each
// checked by certificateProblem. Other block types are refused so that a
// key pasted into a certificate field is reported rather than published.
func parseCertificates(text string) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(text)
	if err != nil {
		return nil, err
	}
	return certificatesOf(blocks)
}

func certificatesOf(blocks []numberedBlock) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			if strings.Contains(b.Type, "PRIVATE KEY") {
				return nil, fmt.Errorf("block %d is a private key; certificates only here", b.n)
			}
			return nil, fmt.Errorf("block %d is %q, not CERTIFICATE", b.n, b.Type)
		}
		c, err := parseCertificateBlock(b)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("contains no PEM CERTIFICATE block")
	}
	return certs, nil
}

// unsupported says in an operator's words which of Go's parse errors are
// material haroute does not support, though OpenSSL may load it (Go's
// messages name an OID): it is refused all the same, as haroute cannot
// judge it.
func unsupported(err error) error {
	switch msg := err.Error(); {
	case strings.Contains(msg, "unsupported elliptic curve"):
		return fmt.Errorf("its elliptic curve is not one haroute supports (brainpool and secp256k1 are not): use P-256, P-384 or P-521 (%w)", err)
	case strings.Contains(msg, "1.2.840.113549.1.1.10"):
		return fmt.Errorf("it is an RSA-PSS key, which haroute does not support: use an RSA (rsaEncryption), ECDSA or Ed25519 key (%w)", err)
	}
	return err
}

func parseCertificateBlock(b numberedBlock) (*x509.Certificate, error) {
	if err := headerProblem(b); err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("block %d does not parse as a certificate: %w", b.n, unsupported(err))
	}
	if msg := certificateProblem(c); msg != "" {
		return nil, fmt.Errorf("block %d (subject %q) %s", b.n, c.Subject.String(), msg)
	}
	return c, nil
}

// certificateProblem says why OpenSSL at security level 2, or OpenShift's
// admission, refuses c wherever it appears (served, chain or CA file), or
// returns "".
func certificateProblem(c *x509.Certificate) string {
	if c.PublicKeyAlgorithm == x509.UnknownPublicKeyAlgorithm {
		if msg := unknownKeyProblem(c); msg != "" {
			return msg
		}
	} else if msg := publicKeyProblem(c.PublicKey); msg != "" {
		return msg
	}
	if c.SignatureAlgorithm == x509.UnknownSignatureAlgorithm && !bytes.Equal(c.RawIssuer, c.RawSubject) {
		if msg := unknownSignatureProblem(c); msg != "" {
			return msg
		}
	}
	if weakSignature(c.SignatureAlgorithm) && !isSelfSigned(c) {
		// OpenSSL checks the signature of every certificate but a
		// self-signed one ("ca md too weak"); OpenShift 4.16 rejects the
		// same set, so that old roots signed with SHA-1 still load.
		return fmt.Sprintf("is signed by its issuer with %s: SHA-1 and MD5 signatures are refused (\"ca md too weak\"), except on self-signed certificates", c.SignatureAlgorithm)
	}
	return ""
}

// oidRSAPSS is id-RSASSA-PSS, the key algorithm of RSA keys restricted to
// PSS signatures, which Go's x509 parses as an unknown algorithm.
var oidRSAPSS = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}

// unknownKeyProblem judges a key Go's x509 does not know: an RSA-PSS key by
// its modulus, as OpenSSL does; any other is refused, since haroute cannot
// tell whether OpenSSL loads it.
func unknownKeyProblem(c *x509.Certificate) string {
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if rest, err := asn1.Unmarshal(c.RawSubjectPublicKeyInfo, &spki); err != nil || len(rest) > 0 {
		return "has a public key that does not parse"
	}
	if !spki.Algorithm.Algorithm.Equal(oidRSAPSS) {
		return fmt.Sprintf("has a public key of an algorithm haroute cannot judge (%s): use an RSA, ECDSA or Ed25519 key", spki.Algorithm.Algorithm)
	}
	k, err := x509.ParsePKCS1PublicKey(spki.PublicKey.RightAlign())
	if err != nil {
		return "has an RSA-PSS public key that does not parse"
	}
	if bits := k.N.BitLen(); bits < minRSABits {
		return fmt.Sprintf("has a %d-bit RSA-PSS key: OpenSSL (security level 2) refuses keys under %d bits (\"key too small\")", bits, minRSABits)
	}
	return ""
}

// Hashes RSA-PSS signatures name in their parameters that OpenSSL's
// security level 2 refuses, as it refuses SHA-1 and MD5 signatures.
var (
	oidSHA1 = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidMD5  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 5}
)

// unknownSignatureProblem judges a signature Go's x509 does not name. Go
// names RSA-PSS only with the exact parameters of RFC 4055 for SHA-256,
// 384 and 512; OpenSSL's default salt, or SHA-1, leave it unnamed. PSS is
// judged by the hash its parameters give (SHA-1 when they give none);
// any other algorithm is refused, since haroute cannot tell whether
// OpenSSL takes it.
func unknownSignatureProblem(c *x509.Certificate) string {
	var outer struct {
		TBS       asn1.RawValue
		Algorithm pkix.AlgorithmIdentifier
	}
	if _, err := asn1.Unmarshal(c.Raw, &outer); err != nil {
		return "has a signature algorithm that does not parse"
	}
	if !outer.Algorithm.Algorithm.Equal(oidRSAPSS) {
		return fmt.Sprintf("is signed by its issuer with an algorithm haroute cannot judge (%s): reissue it with SHA-256 or better", outer.Algorithm.Algorithm)
	}
	var params struct {
		Hash pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:0"`
	}
	if len(outer.Algorithm.Parameters.FullBytes) > 0 {
		if _, err := asn1.Unmarshal(outer.Algorithm.Parameters.FullBytes, &params); err != nil {
			return "is signed with RSA-PSS parameters that do not parse"
		}
	}
	hash := params.Hash.Algorithm
	if len(hash) == 0 {
		hash = oidSHA1 // RFC 4055's default
	}
	if hash.Equal(oidSHA1) || hash.Equal(oidMD5) {
		return "is signed by its issuer with RSA-PSS over SHA-1 or MD5: such signatures are refused (\"ca md too weak\"), except on self-signed certificates"
	}
	return ""
}

// publicKeyProblem judges a key's size as OpenSSL's security level 2 does.
func publicKeyProblem(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < minRSABits {
			return fmt.Sprintf("has a %d-bit RSA key: OpenSSL (security level 2) refuses keys under %d bits (\"key too small\")", bits, minRSABits)
		}
	case *dsa.PublicKey:
		if bits := k.P.BitLen(); bits < minRSABits {
			return fmt.Sprintf("has a %d-bit DSA key: OpenSSL (security level 2) refuses keys under %d bits (\"key too small\")", bits, minRSABits)
		}
	case *ecdsa.PublicKey:
		if bits := k.Curve.Params().BitSize; bits < minECBits {
			return fmt.Sprintf("has a %d-bit elliptic curve key: OpenSSL (security level 2) refuses curves under %d bits", bits, minECBits)
		}
	}
	return ""
}

// weakSignature lists the algorithms OpenShift refuses on CA-signed
// certificates; OpenSSL 3 rates each below level 2's 112 bits.
func weakSignature(a x509.SignatureAlgorithm) bool {
	switch a {
	case x509.SHA1WithRSA, x509.ECDSAWithSHA1, x509.DSAWithSHA1, x509.MD5WithRSA, x509.MD2WithRSA:
		return true
	}
	return false
}

// isSelfSigned mirrors OpenSSL's EXFLAG_SS as OpenShift does: the issuer is
// the subject, the authority key id (if any) is the subject's, and the
// signature algorithm fits the certificate's own key.
func isSelfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) &&
		(c.AuthorityKeyId == nil || bytes.Equal(c.AuthorityKeyId, c.SubjectKeyId)) &&
		signatureKeyAlgorithm(c.SignatureAlgorithm) == c.PublicKeyAlgorithm
}

func signatureKeyAlgorithm(a x509.SignatureAlgorithm) x509.PublicKeyAlgorithm {
	switch a {
	case x509.MD2WithRSA, x509.MD5WithRSA, x509.SHA1WithRSA, x509.SHA256WithRSA, x509.SHA384WithRSA,
		x509.SHA512WithRSA, x509.SHA256WithRSAPSS, x509.SHA384WithRSAPSS, x509.SHA512WithRSAPSS:
		return x509.RSA
	case x509.DSAWithSHA1, x509.DSAWithSHA256:
		return x509.DSA
	case x509.ECDSAWithSHA1, x509.ECDSAWithSHA256, x509.ECDSAWithSHA384, x509.ECDSAWithSHA512:
		return x509.ECDSA
	case x509.PureEd25519:
		return x509.Ed25519
	}
	return x509.UnknownPublicKeyAlgorithm
}

// parsePrivateKey returns the one private key in text: PKCS#1 RSA, SEC 1 EC
// or PKCS#8 (RSA, ECDSA, Ed25519). "EC PARAMETERS" blocks, which
// `openssl ecparam -genkey` writes, are skipped.
func parsePrivateKey(text string) (crypto.Signer, error) {
	blocks, err := pemBlocks(text)
	if err != nil {
		return nil, err
	}
	return privateKeyOf(blocks)
}

func privateKeyOf(blocks []numberedBlock) (crypto.Signer, error) {
	var key crypto.Signer
	for _, b := range blocks {
		if b.Type == "EC PARAMETERS" {
			continue
		}
		if key != nil {
			return nil, fmt.Errorf("block %d: more than one private key", b.n)
		}
		if b.Headers["Proc-Type"] != "" || b.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, errors.New("is an encrypted private key; HAProxy needs it unencrypted")
		}
		if err := headerProblem(b); err != nil {
			return nil, err
		}
		k, err := parseKeyBlock(b.Block)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", b.n, err)
		}
		if msg := publicKeyProblem(k.Public()); msg != "" {
			return nil, fmt.Errorf("block %d %s", b.n, msg)
		}
		key = k
	}
	if key == nil {
		return nil, errors.New("contains no PEM private key block")
	}
	return key, nil
}

// keyParses reports whether text holds PEM private keys that parse,
// whatever their strength: the check of a key that is never used.
func keyParses(text string) error {
	blocks, err := pemBlocks(text)
	if err != nil {
		return err
	}
	n := 0
	for _, b := range blocks {
		if b.Type == "EC PARAMETERS" {
			continue
		}
		if _, err := parseKeyBlock(b.Block); err != nil {
			if relabeled(b.Block) == nil {
				return fmt.Errorf("block %d: %w", b.n, err)
			}
		}
		n++
	}
	if n == 0 {
		return errors.New("contains no PEM private key block")
	}
	return nil
}

// keyLabels are the block types OpenShift's router takes as a private key
// whatever format the block holds (routeapihelpers knownBlockDecoders).
var keyLabels = []string{"RSA PRIVATE KEY", "EC PRIVATE KEY", "ECDSA PRIVATE KEY", "PRIVATE KEY"}

// relabeled returns a key block that OpenSSL would misread written anew,
// as OpenShift's router writes every key (routeapihelpers sanitizePEM):
// under the label that fits its content (a SEC 1 key under "PRIVATE KEY",
// an "ECDSA PRIVATE KEY"), and with the public key its private value
// gives (an EC key may carry another). nil when it is no such block.
func relabeled(b *pem.Block) *pem.Block {
	if !slices.Contains(keyLabels, b.Type) {
		return nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		if der, err := x509.MarshalECPrivateKey(k); err == nil {
			return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
		}
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		if der, err := x509.MarshalPKCS8PrivateKey(k); err == nil {
			return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
		}
	}
	return nil
}

// withRelabeledKey returns tls with the blocks of its key that OpenSSL
// would misread written anew (relabeled), as OpenShift's router rewrites
// them before HAProxy reads them, with a note. A key whose blocks
// all parse as labelled is returned unchanged, byte for byte.
func withRelabeledKey(c *routeCheck, tls *TLSConfig) *TLSConfig {
	blocks, err := pemBlocks(tls.Key)
	if err != nil {
		return tls
	}
	var out []byte
	changed := false
	for _, b := range blocks {
		if _, err := parseKeyBlock(b.Block); err != nil && slices.Contains(keyLabels, b.Type) {
			if nb := relabeled(b.Block); nb != nil {
				msg := fmt.Sprintf("key block %d is labelled %q but is read as %q, as OpenShift reads it", b.n, b.Type, nb.Type)
				if nb.Type == b.Type {
					msg = fmt.Sprintf("key block %d %s; it is written with its own, as OpenShift's router writes keys", b.n, err)
				}
				c.add(SeverityNote, c.pos("spec.tls.key"), "spec.tls.key", msg)
				out = append(out, pem.EncodeToMemory(nb)...)
				changed = true
				continue
			}
		}
		out = append(out, pem.EncodeToMemory(b.Block)...)
	}
	if !changed {
		return tls
	}
	fixed := *tls
	fixed.Key = string(out)
	return &fixed
}

func parseKeyBlock(b *pem.Block) (crypto.Signer, error) {
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("does not parse as a PKCS#1 RSA key: %w", err)
		}
		return k, nil
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("does not parse as an EC key: %w", err)
		}
		if err := embeddedPublicKeyProblem(b.Bytes, k); err != nil {
			return nil, err
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("does not parse as a PKCS#8 key: %w", unsupported(err))
		}
		switch k := k.(type) {
		case *rsa.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
			var p8 struct {
				Version    int
				Algorithm  pkix.AlgorithmIdentifier
				PrivateKey []byte
				Attributes asn1.RawValue `asn1:"optional,tag:0"`
				PublicKey  asn1.RawValue `asn1:"optional,tag:1"`
			}
			if _, err := asn1.Unmarshal(b.Bytes, &p8); err == nil {
				if err := embeddedPublicKeyProblem(p8.PrivateKey, k); err != nil {
					return nil, err
				}
			}
			return k, nil
		case ed25519.PrivateKey:
			return k, nil
		default:
			return nil, fmt.Errorf("unsupported key type %T", k)
		}
	case "CERTIFICATE":
		return nil, errors.New("is a certificate, not a private key")
	default:
		return nil, fmt.Errorf("%q is not a private key block", b.Type)
	}
}

// embeddedPublicKeyProblem checks the public key a SEC 1 EC private key
// (der) may carry against the one its private value gives. Go derives the
// public key and ignores the field; OpenSSL takes the field, so a key
// whose field is another key's matches its certificate for Go and not
// for HAProxy ("inconsistencies between private key and certificate").
func embeddedPublicKeyProblem(der []byte, k *ecdsa.PrivateKey) error {
	var sec1 struct {
		Version    int
		PrivateKey []byte
		Curve      asn1.ObjectIdentifier `asn1:"optional,explicit,tag:0"`
		PublicKey  asn1.BitString        `asn1:"optional,explicit,tag:1"`
	}
	if _, err := asn1.Unmarshal(der, &sec1); err != nil || sec1.PublicKey.BitLength == 0 {
		return nil // Go parsed it, and it carries no public key
	}
	pub, err := k.PublicKey.ECDH()
	if err != nil {
		return nil
	}
	want, got := pub.Bytes(), sec1.PublicKey.Bytes // uncompressed: 04 X Y
	n := (len(want) - 1) / 2
	switch {
	case len(got) == len(want) && bytes.Equal(got, want):
		return nil
	case len(got) == 1+n && (got[0] == 2 || got[0] == 3) && bytes.Equal(got[1:], want[1:1+n]) && got[0]&1 == want[len(want)-1]&1:
		return nil // compressed: 02 or 03 (the parity of Y), then X
	}
	return errors.New("carries a public key that is not its own, which OpenSSL would take")
}

// keyMatchesCertificate reports whether key is the private half of cert's
// public key.
func keyMatchesCertificate(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return false
	}
	return pub.Equal(key.Public())
}

// certKeyProblem is one finding about a route's TLS material, tied to the
// field it is about.
type certKeyProblem struct {
	field string // "certificate", "key", "caCertificate", …
	msg   string
}

// checkCertificateAndKey validates a certificate chain and its key: both
// parse and pass OpenSSL's checks, and the key belongs to the leaf (the
// first certificate). It returns the chain when all is well.
func checkCertificateAndKey(certPEM, keyPEM string) ([]*x509.Certificate, *certKeyProblem) {
	certs, err := parseCertificates(certPEM)
	if err != nil {
		return nil, &certKeyProblem{field: "certificate", msg: "certificate " + err.Error()}
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		return nil, &certKeyProblem{field: "key", msg: "key " + err.Error()}
	}
	if !keyMatchesCertificate(certs[0], key) {
		return nil, &certKeyProblem{field: "key", msg: keyMismatch(certs, key)}
	}
	return certs, nil
}

// keyMismatch says why key does not go with the chain certs: for another
// certificate, or for one of the chain that is not first, the order
// HAProxy and OpenSSL read a chain in (the served certificate, then its
// issuers).
func keyMismatch(certs []*x509.Certificate, key crypto.Signer) string {
	for i, c := range certs[1:] {
		if keyMatchesCertificate(c, key) {
			return fmt.Sprintf("key does not match the first certificate (subject %q) but certificate %d of the chain (subject %q): the certificate the key belongs to must come first, then its issuers",
				certs[0].Subject.String(), i+2, c.Subject.String())
		}
	}
	return fmt.Sprintf("key does not match the certificate (subject %q)", certs[0].Subject.String())
}

// checkRouteTLSMaterial judges the PEM fields of an edge or reencrypt
// route: what HAProxy will load from them (the crt file is certificate,
// key and caCertificate in that order; destinationCACertificate is a
// ca-file) and OpenShift's rule that caCertificate issued the certificate.
// Each problem names its field; an unset field is not judged.
func checkRouteTLSMaterial(tls *TLSConfig) []certKeyProblem {
	var problems []certKeyProblem
	var chain []*x509.Certificate
	if tls.Certificate != "" && tls.Key != "" {
		var p *certKeyProblem
		if chain, p = checkCertificateAndKey(tls.Certificate, tls.Key); p != nil {
			problems = append(problems, *p)
		}
	}
	if tls.CACertificate != "" {
		cas, err := parseCertificates(tls.CACertificate)
		switch {
		case err != nil:
			problems = append(problems, certKeyProblem{field: "caCertificate", msg: "caCertificate " + err.Error()})
		case chain != nil && !chainsToCA(chain, cas):
			problems = append(problems, certKeyProblem{field: "certificate", msg: fmt.Sprintf(
				"certificate (subject %q, issuer %q) is not signed by caCertificate, directly or through the chain in certificate",
				chain[0].Subject.String(), chain[len(chain)-1].Issuer.String())})
		}
	}
	if tls.DestinationCACertificate != "" && tls.Termination != TerminationEdge {
		if _, err := parseCertificates(tls.DestinationCACertificate); err != nil {
			problems = append(problems, certKeyProblem{field: "destinationCACertificate", msg: "destinationCACertificate " + err.Error()})
		}
	}
	return problems
}

// signedBy reports whether ca signed c. Go cannot check signatures made
// with some keys OpenSSL takes (RSA-PSS); for those the names decide, as
// a signature haroute cannot check is not a reason to refuse the chain.
func signedBy(c, ca *x509.Certificate) bool {
	err := c.CheckSignatureFrom(ca)
	if errors.Is(err, x509.ErrUnsupportedAlgorithm) {
		return bytes.Equal(c.RawIssuer, ca.RawSubject)
	}
	return err == nil
}

// chainsToCA reports whether the leaf chain[0] was issued by a certificate
// in cas, directly or through the certificates after it in chain.
// OpenShift verifies the leaf against caCertificate alone; taking the
// chain's intermediates too admits the usual leaf + intermediate
// certificate with a root caCertificate. Time is not judged (see above).
func chainsToCA(chain, cas []*x509.Certificate) bool {
	cur := chain[0]
	used := make([]bool, len(chain))
	used[0] = true
	for range chain {
		for _, ca := range cas {
			if cur.Equal(ca) || signedBy(cur, ca) {
				return true
			}
		}
		next := -1
		for i, c := range chain {
			if !used[i] && signedBy(cur, c) {
				next = i
				break
			}
		}
		if next < 0 {
			return false
		}
		used[next] = true
		cur = chain[next]
	}
	return false
}

// CheckCertificateBundle judges PEM holding a certificate chain and its
// private key in one text, the form of HAProxy crt files and of
// RouterConfig spec.defaultCertificate (inline or in a file). nil means
// HAProxy 2.6 will load it and haroute's rules admit it; the error says
// what is wrong, citing blocks by their place in text.
func CheckCertificateBundle(text []byte) error {
	blocks, err := pemBlocks(string(text))
	if err != nil {
		return err
	}
	var certBlocks, keyBlocks []numberedBlock
	for _, b := range blocks {
		switch {
		case b.Type == "CERTIFICATE":
			certBlocks = append(certBlocks, b)
		case strings.HasSuffix(b.Type, "PRIVATE KEY") || b.Type == "EC PARAMETERS":
			keyBlocks = append(keyBlocks, b)
		default:
			// Read as a second key, DH parameters were "more than one
			// private key".
			return fmt.Errorf("block %d is %s: only CERTIFICATE and PRIVATE KEY blocks belong here", b.n, b.Type)
		}
	}
	if len(certBlocks) == 0 {
		return errors.New("contains no PEM CERTIFICATE block")
	}
	if len(keyBlocks) == 0 {
		return errors.New("contains no private key: it needs the certificate chain and its key")
	}
	certs, err := certificatesOf(certBlocks)
	if err != nil {
		return err
	}
	key, err := privateKeyOf(keyBlocks)
	if err != nil {
		return fmt.Errorf("key %w", err)
	}
	if !keyMatchesCertificate(certs[0], key) {
		return errors.New(keyMismatch(certs, key))
	}
	return nil
}

// CheckCABundle judges PEM CA certificates as HAProxy loads a ca-file
// (spec.tls.destinationCACertificate, RouterConfig
// spec.defaultDestinationCA). HAProxy loads small keys and weak signatures
// here without complaint, but every handshake verified against them then
// fails, so they are refused as in a crt file.
func CheckCABundle(text []byte) error {
	_, err := parseCertificates(string(text))
	return err
}

// withBundledKey returns tls with a private key written inside
// spec.tls.certificate moved to the key: OpenShift's router admits a
// certificate field holding the key too, and uses that key first. The
// returned copy holds the certificate blocks alone, as HAProxy's crt file
// is written from certificate and key. tls is returned unchanged when the
// certificate holds no key (or does not decode: validation says why).
func withBundledKey(c *routeCheck, tls *TLSConfig) *TLSConfig {
	if !strings.Contains(tls.Certificate, "PRIVATE KEY") {
		return tls
	}
	blocks, err := pemBlocks(tls.Certificate)
	if err != nil {
		return tls
	}
	var certs, keys []byte
	for _, b := range blocks {
		if strings.Contains(b.Type, "PRIVATE KEY") || b.Type == "EC PARAMETERS" {
			keys = append(keys, pem.EncodeToMemory(b.Block)...)
		} else {
			certs = append(certs, pem.EncodeToMemory(b.Block)...)
		}
	}
	if len(keys) == 0 || len(certs) == 0 {
		return tls // no key, or only a key: validation says what is wrong
	}
	out := *tls
	out.Certificate = string(certs)
	const field = "spec.tls.certificate"
	switch {
	case tls.Key == "":
		c.add(SeverityNote, c.pos(field), field, "certificate holds the private key too: it is used as the key, as OpenShift does")
	case strings.TrimSpace(tls.Key) != strings.TrimSpace(string(keys)):
		c.warnf("spec.tls.key", "certificate holds a private key too: that key is used and this one is ignored, as OpenShift does")
	}
	out.Key = string(keys)
	return &out
}

// CertificateNotAfter is the expiry of the first certificate in pemData
// (the one served; the rest is its chain), or zero when there is none.
func CertificateNotAfter(pemData string) time.Time {
	rest := []byte(pemData)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return time.Time{}
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return time.Time{}
		}
		return c.NotAfter
	}
}
