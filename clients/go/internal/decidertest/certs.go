package decidertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a throwaway CA, a server certificate for loopback and a client certificate, as PEM
// files (the Go twin of tests/support/certs.py).
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// MakePKI writes a PKI into a temporary directory of the test.
func MakePKI(t testing.TB) PKI {
	t.Helper()
	dir := t.TempDir()
	p := PKI{CA: filepath.Join(dir, "ca.pem"), ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey: filepath.Join(dir, "server-key.pem"), ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey: filepath.Join(dir, "client-key.pem")}
	caKey := key(t)
	caTemplate := template("test-ca")
	caTemplate.IsCA, caTemplate.BasicConstraintsValid = true, true
	caTemplate.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER := sign(t, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	write(t, p.CA, "CERTIFICATE", caDER)

	serverKey := key(t)
	server := template("decider")
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	server.DNSNames = []string{"localhost"}
	server.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	write(t, p.ServerCert, "CERTIFICATE", sign(t, server, ca, &serverKey.PublicKey, caKey))
	writeKey(t, p.ServerKey, serverKey)

	clientKey := key(t)
	client := template("decider-go-client")
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	write(t, p.ClientCert, "CERTIFICATE", sign(t, client, ca, &clientKey.PublicKey, caKey))
	writeKey(t, p.ClientKey, clientKey)
	return p
}

func key(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func template(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-5 * time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
}

func sign(t testing.TB, cert, parent *x509.Certificate, pub *ecdsa.PublicKey, by *ecdsa.PrivateKey) []byte {
	der, err := x509.CreateCertificate(rand.Reader, cert, parent, pub, by)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writeKey(t testing.TB, path string, k *ecdsa.PrivateKey) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "PRIVATE KEY", der)
}

func write(t testing.TB, path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
