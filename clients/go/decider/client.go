// Package decider is a Go client of the jobset-decider contract (decider.v1): Decide,
// Simulate, Validate, PlanGang and PodSets over gRPC, with requests built from Kubernetes
// objects as a Go program holds them (the JSON client-go reads), a deadline on every call,
// TLS or mutual TLS, round-robin over every address a dns:/// target resolves to, and retries
// that honour the server's pushback (RetryServiceConfig).
//
// Errors are the server's gRPC status, untouched: INVALID_ARGUMENT's message starts with the
// field it is about ("spec.replicatedJobs[1].name: Required value"; InvalidField splits it).
package decider

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	deciderv1 "github.com/jobset-decider/jobset-decider/clients/go/decider/v1"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 5 * time.Second

// DefaultMaxMessageBytes is the largest request or answer accepted, as the other clients'.
const DefaultMaxMessageBytes = 64 << 20

// roundRobin spreads calls over every address the target resolves to (a headless Service
// behind dns:///), as the shim does; with one address it is that address.
const roundRobin = `{"loadBalancingConfig": [{"round_robin": {}}]}`

// Options configure a Client. The zero value is a plaintext client with the defaults.
type Options struct {
	// Timeout bounds each call whose context carries no deadline (0: DefaultTimeout). Retries
	// run within the same deadline.
	Timeout time.Duration
	// TLS: the CA to trust and, for mutual TLS, the client's certificate and key, as files.
	// nil (and no Credentials): plaintext.
	TLS *TLSFiles
	// Credentials replace TLS when set (credentials.NewTLS(yourConfig), say).
	Credentials credentials.TransportCredentials
	// MaxMessageBytes bounds requests and answers (0: DefaultMaxMessageBytes).
	MaxMessageBytes int
	// Retry is the retry policy (nil: DefaultRetryPolicy(); &NoRetry: none).
	Retry *RetryPolicy
	// DialOptions are passed to grpc.NewClient after the client's own (a stats handler, more
	// interceptors...).
	DialOptions []grpc.DialOption
}

// Client calls one decider (or every replica a dns:/// target resolves to). It is safe for
// concurrent use; Close it when done.
type Client struct {
	conn    *grpc.ClientConn
	stub    deciderv1.DeciderClient
	timeout time.Duration
	retries atomic.Int64
}

// Dial makes a Client for target ("localhost:50051", "dns:///decider.ns.svc:50051"). It does
// not wait for a connection: the first call does, within its deadline.
func Dial(target string, opts Options) (*Client, error) {
	policy := DefaultRetryPolicy()
	if opts.Retry != nil {
		policy = *opts.Retry
		if err := policy.check(); err != nil {
			return nil, err
		}
	}
	max := opts.MaxMessageBytes
	if max == 0 {
		max = DefaultMaxMessageBytes
	}
	creds := opts.Credentials
	if creds == nil && opts.TLS != nil {
		var err error
		if creds, err = opts.TLS.credentials(); err != nil {
			return nil, err
		}
	}
	c := &Client{timeout: opts.Timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	dial := []grpc.DialOption{
		grpc.WithDefaultServiceConfig(roundRobin),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max), grpc.MaxCallSendMsgSize(max)),
		grpc.WithChainUnaryInterceptor(policy.interceptor(&c.retries)),
	}
	if creds != nil {
		dial = append(dial, grpc.WithTransportCredentials(creds))
	} else {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	// grpc.NewClient (gRPC-Go 1.63+, go.mod asks for 1.64) resolves a target without a scheme
	// with DNS, as dns:///target: every address of a name, balanced round robin.
	conn, err := grpc.NewClient(target, append(dial, opts.DialOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("decider: %s: %w", target, err)
	}
	c.conn = conn
	c.stub = deciderv1.NewDeciderClient(conn)
	return c, nil
}

// Conn is the client's connection, for other services of the same server (grpc.health.v1).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Retries counts the calls sent again since Dial (each retry once).
func (c *Client) Retries() int64 { return c.retries.Load() }

// Close closes the connection; calls in flight end with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// bounded gives ctx the client's timeout when it has no deadline of its own.
func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// Decide asks for one reconcile pass of a JobSet: the plan (NewDecideRequest builds the request).
func (c *Client) Decide(ctx context.Context, req *deciderv1.DecideRequest, opts ...grpc.CallOption) (*deciderv1.DecideResponse, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return c.stub.Decide(ctx, req, opts...)
}

// Simulate rolls Decide passes forward under hypothetical events, to an outcome.
func (c *Client) Simulate(ctx context.Context, req *deciderv1.SimulateRequest, opts ...grpc.CallOption) (*deciderv1.SimulateResponse, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return c.stub.Simulate(ctx, req, opts...)
}

// Validate is admission: defaulting and validation of a JobSet (or a Job's gang rules). An
// invalid object is an answer (Valid false, one error per field), not an error.
func (c *Client) Validate(ctx context.Context, req *deciderv1.ValidateRequest, opts ...grpc.CallOption) (*deciderv1.ValidateResponse, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return c.stub.Validate(ctx, req, opts...)
}

// PlanGang asks for the Workload/PodGroup objects a Job or JobSet needs.
func (c *Client) PlanGang(ctx context.Context, req *deciderv1.PlanGangRequest, opts ...grpc.CallOption) (*deciderv1.PlanGangResponse, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return c.stub.PlanGang(ctx, req, opts...)
}

// PodSets asks for Kueue's pod sets of a Job or JobSet: counts, per-pod and total requests,
// node selectors, tolerations, topology requests.
func (c *Client) PodSets(ctx context.Context, req *deciderv1.PodSetsRequest, opts ...grpc.CallOption) (*deciderv1.PodSetsResponse, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return c.stub.PodSets(ctx, req, opts...)
}
