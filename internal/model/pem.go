package model

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// PEM material is validated here so that a broken certificate rejects one
// route at check time instead of making `haproxy -c` fail for all of them.

// looksLikePEM tells inline PEM from a file path in RouterConfig fields that
// accept either.
func looksLikePEM(s string) bool { return strings.Contains(s, "-----BEGIN") }

// pemBlocks decodes every PEM block in text. Text outside blocks (comments,
// `openssl x509 -text` output) is allowed, as HAProxy allows it, but a
// "-----BEGIN" that does not decode is an error: it is a damaged block,
// not commentary.
func pemBlocks(text string) ([]*pem.Block, error) {
	var blocks []*pem.Block
	rest := []byte(text)
	for {
		block, after := pem.Decode(rest)
		if block == nil {
			break
		}
		blocks = append(blocks, block)
		rest = after
	}
	if strings.Contains(string(rest), "-----BEGIN") {
		if len(blocks) == 0 {
			return nil, errors.New("is not valid PEM: a block does not decode (damaged base64 or missing END line)")
		}
		return nil, fmt.Errorf("is not valid PEM: block %d does not decode (damaged base64 or missing END line)", len(blocks)+1)
	}
	return blocks, nil
}

// parseCertificates returns the certificates in text, leaf first. Other
// block types are refused so that a key pasted into a certificate field is
// reported rather than published.
func parseCertificates(text string) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(text)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			if strings.Contains(b.Type, "PRIVATE KEY") {
				return nil, fmt.Errorf("block %d is a private key; certificates only here", i+1)
			}
			return nil, fmt.Errorf("block %d is %q, not CERTIFICATE", i+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("block %d does not parse as a certificate: %w", i+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("contains no PEM CERTIFICATE block")
	}
	return certs, nil
}

// parsePrivateKey returns the one private key in text: PKCS#1 RSA, SEC 1 EC
// or PKCS#8 (RSA, ECDSA, Ed25519). "EC PARAMETERS" blocks, which
// `openssl ecparam -genkey` writes, are skipped.
func parsePrivateKey(text string) (crypto.Signer, error) {
	blocks, err := pemBlocks(text)
	if err != nil {
		return nil, err
	}
	var key crypto.Signer
	for i, b := range blocks {
		if b.Type == "EC PARAMETERS" {
			continue
		}
		if key != nil {
			return nil, fmt.Errorf("block %d: more than one private key", i+1)
		}
		if b.Headers["Proc-Type"] != "" || b.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, errors.New("is an encrypted private key; HAProxy needs it unencrypted")
		}
		k, err := parseKeyBlock(b)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i+1, err)
		}
		key = k
	}
	if key == nil {
		return nil, errors.New("contains no PEM private key block")
	}
	return key, nil
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
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("does not parse as a PKCS#8 key: %w", err)
		}
		switch k := k.(type) {
		case *rsa.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
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

// keyMatchesCertificate reports whether key is the private half of cert's
// public key.
func keyMatchesCertificate(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return false
	}
	return pub.Equal(key.Public())
}

// certKeyProblem is one finding of checkCertificateAndKey, tied to the
// field it is about.
type certKeyProblem struct {
	onKey bool // the key is at fault rather than the certificate
	msg   string
}

// checkCertificateAndKey validates a certificate chain and its key: both
// parse, and the key belongs to the leaf (the first certificate).
func checkCertificateAndKey(certPEM, keyPEM string) *certKeyProblem {
	certs, err := parseCertificates(certPEM)
	if err != nil {
		return &certKeyProblem{msg: "certificate " + err.Error()}
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		return &certKeyProblem{onKey: true, msg: "key " + err.Error()}
	}
	if !keyMatchesCertificate(certs[0], key) {
		return &certKeyProblem{onKey: true, msg: fmt.Sprintf("key does not match the certificate (subject %q)", certs[0].Subject.String())}
	}
	return nil
}

// checkCertificateBundle validates PEM holding a certificate chain and its
// key in one text, the form HAProxy's crt files and
// RouterConfig.spec.defaultCertificate use.
func checkCertificateBundle(text string) error {
	blocks, err := pemBlocks(text)
	if err != nil {
		return err
	}
	var certs, keys strings.Builder
	for _, b := range blocks {
		if b.Type == "CERTIFICATE" {
			certs.Write(pem.EncodeToMemory(b))
		} else {
			keys.Write(pem.EncodeToMemory(b))
		}
	}
	if certs.Len() == 0 {
		return errors.New("contains no PEM CERTIFICATE block")
	}
	if keys.Len() == 0 {
		return errors.New("contains no private key: inline PEM needs the certificate chain and its key")
	}
	if p := checkCertificateAndKey(certs.String(), keys.String()); p != nil {
		return errors.New(p.msg)
	}
	return nil
}
