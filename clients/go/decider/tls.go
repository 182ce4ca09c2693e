package decider

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// TLSFiles are PEM files, as `decider serve --tls-*-file` and the shim's --decider-*-file
// take them.
type TLSFiles struct {
	// CAFile: the CA(s) that signed the server's certificate ("": the system's).
	CAFile string
	// CertFile and KeyFile: the client's certificate and key, for a server that asks for one
	// (--tls-client-ca-file). Both or neither. They are read again at the next handshake after
	// either file changes, so a renewed certificate needs no new Client; the CA is read once.
	CertFile string
	KeyFile  string
	// ServerName overrides the name checked in the server's certificate ("": the target's host).
	ServerName string
}

func (f *TLSFiles) credentials() (credentials.TransportCredentials, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("decider: TLS CAFile: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("decider: TLS CAFile %s: no PEM certificate in it", f.CAFile)
		}
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("decider: TLS CertFile and KeyFile go together (got %q and %q)",
			f.CertFile, f.KeyFile)
	}
	if f.CertFile != "" {
		pair := &keyPair{cert: f.CertFile, key: f.KeyFile}
		if _, err := pair.get(nil); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = pair.get
	}
	return credentials.NewTLS(cfg), nil
}

// keyPair is a certificate and key read from files, read again when either file changes.
type keyPair struct {
	cert, key string
	mu        sync.Mutex
	stamp     [2]time.Time
	loaded    *tls.Certificate
}

func (k *keyPair) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	stamp := [2]time.Time{modified(k.cert), modified(k.key)}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded != nil && stamp == k.stamp {
		return k.loaded, nil
	}
	pair, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.loaded != nil {
			// Half-written during a renewal: keep the pair that worked until both files agree.
			return k.loaded, nil
		}
		return nil, fmt.Errorf("decider: TLS CertFile/KeyFile: %w", err)
	}
	k.loaded, k.stamp = &pair, stamp
	return k.loaded, nil
}

func modified(path string) time.Time {
	info, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}
