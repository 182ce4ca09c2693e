package decider

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

func TestTheEmbeddedServiceConfigIsTheDefaultPolicy(t *testing.T) {
	p := DefaultRetryPolicy()
	if p.MaxAttempts != 5 || p.InitialBackoff != 100*time.Millisecond || p.MaxBackoff != time.Second ||
		p.BackoffMultiplier != 2 || len(p.RetryableStatusCodes) != 2 ||
		!p.retryable(codes.Unavailable) || !p.retryable(codes.ResourceExhausted) {
		t.Fatalf("policy %+v", p)
	}
}

// The rules of gRFC A6 the interceptor follows, and the decider's own about RESOURCE_EXHAUSTED.
func TestRetryDelays(t *testing.T) {
	p := DefaultRetryPolicy()
	pushback := func(values ...string) metadata.MD { return metadata.MD{PushbackKey: values} }
	for _, c := range []struct {
		name     string
		code     codes.Code
		trailer  metadata.MD
		backoffs int
		again    bool
		exactly  time.Duration // with pushback
		below    time.Duration // without: random under this
	}{
		{"load shed: the pushback", codes.ResourceExhausted, pushback("100"), 3, true, 100 * time.Millisecond, 0},
		{"worker lost: the pushback", codes.ResourceExhausted, pushback("500"), 0, true, 500 * time.Millisecond, 0},
		{"pushback 0: at once", codes.Unavailable, pushback("0"), 0, true, 0, 0},
		{"negative pushback: never", codes.ResourceExhausted, pushback("-1"), 0, false, 0, 0},
		{"malformed pushback: never", codes.ResourceExhausted, pushback("soon"), 0, false, 0, 0},
		{"two pushbacks: never", codes.ResourceExhausted, pushback("100", "200"), 0, false, 0, 0},
		{"too large (no pushback): never", codes.ResourceExhausted, nil, 0, false, 0, 0},
		{"unavailable: backoff", codes.Unavailable, nil, 0, true, 0, 100 * time.Millisecond},
		{"unavailable, third retry: backoff doubled twice", codes.Unavailable, nil, 2, true, 0, 400 * time.Millisecond},
		{"unavailable, many retries: at most maxBackoff", codes.Unavailable, nil, 30, true, 0, time.Second},
		{"invalid argument: never", codes.InvalidArgument, pushback("100"), 0, false, 0, 0},
		{"deadline exceeded: never", codes.DeadlineExceeded, nil, 0, false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < 50; i++ { // the backoff is random: its bound holds every time
				wait, again, pushed := p.delay(c.code, c.trailer, c.backoffs)
				if again != c.again {
					t.Fatalf("again = %t", again)
				}
				if !again {
					return
				}
				if pushed != (c.trailer != nil) {
					t.Fatalf("pushed = %t", pushed)
				}
				if c.trailer != nil && wait != c.exactly {
					t.Fatalf("wait %v, want the pushback %v", wait, c.exactly)
				}
				if c.trailer == nil && (wait < 0 || wait >= c.below) {
					t.Fatalf("wait %v, want [0, %v)", wait, c.below)
				}
			}
		})
	}
}

func TestPolicyChecks(t *testing.T) {
	for _, text := range []string{
		`{}`,
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": 0, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2}}]}`,
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": 3, "initialBackoff": "soon", "maxBackoff": "1s", "backoffMultiplier": 2}}]}`,
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 0}}]}`,
		`{"methodConfig": [{"retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["NOPE"]}}]}`,
	} {
		if p, err := ParseRetryServiceConfig(text); err == nil {
			t.Errorf("%s: taken as %+v", text, p)
		}
	}
}
