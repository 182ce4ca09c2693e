package decider

import (
	"context"
	_ "embed" // the retry service config, shared with the Python and Node clients
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// RetryServiceConfig is the retry policy every client of the decider ships (Go, Python, Node:
// the same document, checked equal by the repository's tests), written as gRPC's service config
// (gRFC A6): up to 5 attempts of a call that ended UNAVAILABLE or RESOURCE_EXHAUSTED, waiting
// what the server's pushback says, else an exponential backoff with jitter.
//
// The client applies it itself, in a unary interceptor, rather than handing it to gRPC:
//
//   - an interceptor above gRPC's own retries sees one call however many attempts it took, and
//     the count of retries is what a caller watches (Client.Retries);
//
//   - RESOURCE_EXHAUSTED without a pushback is the decider saying the input is over a limit, which
//     no retry changes: it is not retried (a service config cannot say so).
//
//   - it was first written for gRPC-Go 1.33, which ignores a retry policy unless the process was
//     started with GRPC_GO_RETRY=on (before 1.41): a flood of 160 calls against `decider serve
//     --max-pending 1` lost 26 to RESOURCE_EXHAUSTED with the policy in the service config.
//
// Handing the document to gRPC instead (grpc.WithDefaultServiceConfig, with Options.Retry set to
// &NoRetry, or every attempt would be retried again) works too, the pushback honoured.
//
//go:embed retry_service_config.json
var RetryServiceConfig string

// PushbackKey is the trailer a server sends to say when to try again (gRFC A6): the decider
// sends 100 (ms) when it sheds load past --max-pending and 500 when a decision worker was lost.
const PushbackKey = "grpc-retry-pushback-ms"

// RetryPolicy says which failed calls are sent again, how often and after how long.
type RetryPolicy struct {
	// MaxAttempts counts the first one: 1 never retries.
	MaxAttempts int
	// The delay before retry n (from 0) without pushback is random in
	// [0, min(InitialBackoff * BackoffMultiplier^n, MaxBackoff)).
	InitialBackoff    time.Duration
	MaxBackoff        time.Duration
	BackoffMultiplier float64
	// Codes worth trying again.
	RetryableStatusCodes []codes.Code
}

// NoRetry sends every call once.
var NoRetry = RetryPolicy{MaxAttempts: 1}

// DefaultRetryPolicy is RetryServiceConfig's policy.
func DefaultRetryPolicy() RetryPolicy {
	p, err := ParseRetryServiceConfig(RetryServiceConfig)
	if err != nil {
		panic("decider: the embedded retry service config: " + err.Error())
	}
	return p
}

// ParseRetryServiceConfig reads the retryPolicy of a gRPC service config's first methodConfig.
func ParseRetryServiceConfig(text string) (RetryPolicy, error) {
	var doc struct {
		MethodConfig []struct {
			RetryPolicy *struct {
				MaxAttempts          int          `json:"maxAttempts"`
				InitialBackoff       string       `json:"initialBackoff"`
				MaxBackoff           string       `json:"maxBackoff"`
				BackoffMultiplier    float64      `json:"backoffMultiplier"`
				RetryableStatusCodes []codes.Code `json:"retryableStatusCodes"`
			} `json:"retryPolicy"`
		} `json:"methodConfig"`
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return RetryPolicy{}, err
	}
	if len(doc.MethodConfig) == 0 || doc.MethodConfig[0].RetryPolicy == nil {
		return RetryPolicy{}, fmt.Errorf("methodConfig[0].retryPolicy: missing")
	}
	rp := doc.MethodConfig[0].RetryPolicy
	p := RetryPolicy{MaxAttempts: rp.MaxAttempts, BackoffMultiplier: rp.BackoffMultiplier,
		RetryableStatusCodes: rp.RetryableStatusCodes}
	var err error
	if p.InitialBackoff, err = time.ParseDuration(rp.InitialBackoff); err != nil {
		return RetryPolicy{}, fmt.Errorf("methodConfig[0].retryPolicy.initialBackoff: %v", err)
	}
	if p.MaxBackoff, err = time.ParseDuration(rp.MaxBackoff); err != nil {
		return RetryPolicy{}, fmt.Errorf("methodConfig[0].retryPolicy.maxBackoff: %v", err)
	}
	return p, p.check()
}

func (p RetryPolicy) check() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("retry policy: maxAttempts must be 1 or more, got %d", p.MaxAttempts)
	case p.MaxAttempts > 1 && (p.InitialBackoff <= 0 || p.MaxBackoff <= 0):
		return fmt.Errorf("retry policy: initialBackoff and maxBackoff must be positive")
	case p.MaxAttempts > 1 && p.BackoffMultiplier <= 0:
		return fmt.Errorf("retry policy: backoffMultiplier must be positive")
	}
	return nil
}

// delay says whether a call that failed with code and these trailers is sent again, and after
// how long; backoffs counts the retries since the last pushback. As gRFC A6: a pushback of 0 or
// more is the delay, and restarts the backoff; a negative or malformed one forbids a retry. One
// rule more: RESOURCE_EXHAUSTED without a pushback is the decider saying the input is over a
// limit (or gRPC that the message is too large), which no retry changes; load shed carries one.
func (p RetryPolicy) delay(code codes.Code, trailer metadata.MD, backoffs int) (time.Duration, bool, bool) {
	if !p.retryable(code) {
		return 0, false, false
	}
	if values := trailer.Get(PushbackKey); len(values) > 0 {
		ms, err := strconv.Atoi(values[0])
		if len(values) > 1 || err != nil || ms < 0 {
			return 0, false, false
		}
		return time.Duration(ms) * time.Millisecond, true, true
	}
	if code == codes.ResourceExhausted {
		return 0, false, false
	}
	limit := float64(p.InitialBackoff) * math.Pow(p.BackoffMultiplier, float64(backoffs))
	limit = math.Min(limit, float64(p.MaxBackoff))
	return time.Duration(rand.Float64() * limit), true, false
}

func (p RetryPolicy) retryable(code codes.Code) bool {
	for _, c := range p.RetryableStatusCodes {
		if c == code {
			return true
		}
	}
	return false
}

// interceptor sends a unary call again as the policy says, counting the retries in *retries.
// Every attempt runs under the call's one deadline; a retry that could only start after it is
// not waited for: the call ends with the last attempt's error, the server's message intact.
func (p RetryPolicy) interceptor(retries *atomic.Int64) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply interface{}, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		backoffs := 0
		for attempt := 1; ; attempt++ {
			var trailer metadata.MD
			err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Trailer(&trailer))...)
			if err == nil || attempt >= p.MaxAttempts {
				return err
			}
			st, _ := status.FromError(err)
			wait, again, pushed := p.delay(st.Code(), trailer, backoffs)
			if !again {
				return err
			}
			if pushed {
				backoffs = 0
			} else {
				backoffs++
			}
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
				return err
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return contextError(ctx)
			case <-timer.C:
			}
			retries.Add(1)
		}
	}
}

// contextError is the status of a call whose context ended while it waited to be retried.
func contextError(ctx context.Context) error {
	if ctx.Err() == context.DeadlineExceeded {
		return status.Error(codes.DeadlineExceeded, "the deadline passed while waiting to retry")
	}
	return status.Error(codes.Canceled, "cancelled while waiting to retry")
}
