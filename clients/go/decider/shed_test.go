package decider_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/jobset-decider/jobset-decider/clients/go/decider"
	deciderv1 "github.com/jobset-decider/jobset-decider/clients/go/decider/v1"
	"github.com/jobset-decider/jobset-decider/clients/go/internal/decidertest"
)

func staticResolver(t *testing.T, addresses ...string) *manual.Resolver {
	r := manual.NewBuilderWithScheme("decidertest")
	state := resolver.State{}
	for _, a := range addresses {
		state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
	}
	r.InitialState(state)
	return r
}

type outcome struct {
	err     error
	trailer metadata.MD
}

// flood sends `wave` calls at once, `waves` times at most, until `enough` says stop; it
// returns every call's outcome.
func flood(c *decider.Client, req *deciderv1.DecideRequest, wave, waves int, enough func() bool) []outcome {
	var all []outcome
	for w := 0; w < waves && !enough(); w++ {
		got := make([]outcome, wave)
		var group sync.WaitGroup
		for i := range got {
			group.Add(1)
			go func(o *outcome) {
				defer group.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				_, o.err = c.Decide(ctx, req, grpc.Trailer(&o.trailer))
			}(&got[i])
		}
		group.Wait()
		all = append(all, got...)
	}
	return all
}

// A decider with one worker and room for one waiting request sheds the rest of a burst with
// RESOURCE_EXHAUSTED and a 100 ms pushback. Without retries that reaches the caller; with the
// client's policy every call of the flood completes, and the retries are counted.
func TestAShedRequestSucceedsOnRetry(t *testing.T) {
	address := decidertest.Serve(t, "--workers", "1", "--max-pending", "1")
	req, err := decider.NewDecideRequest(decider.DecideInput{JobSet: example(t, "leader-workers.yaml")[0], Now: now})
	if err != nil {
		t.Fatal(err)
	}
	const wave, waves = 6, 20

	// The server sheds: a client without retries sees it, pushback and all.
	bare := dial(t, address, decider.Options{Retry: &decider.NoRetry})
	shed := 0
	for _, o := range flood(bare, req, wave, waves, func() bool { return shed > 0 }) {
		switch status.Code(o.err) {
		case codes.OK:
		case codes.ResourceExhausted:
			shed++
			if got := o.trailer.Get(decider.PushbackKey); len(got) != 1 || got[0] != "100" {
				t.Fatalf("shed with pushback %v, want [100]: %v", got, o.err)
			}
		default:
			t.Fatalf("a call failed otherwise: %v", o.err)
		}
	}
	if shed == 0 {
		t.Fatalf("%d waves of %d calls at once: none was shed", waves, wave)
	}
	if bare.Retries() != 0 {
		t.Fatalf("NoRetry retried %d times", bare.Retries())
	}

	// With the policy, every call completes; some only after a retry.
	c := dial(t, address, decider.Options{})
	calls := 0
	for _, o := range flood(c, req, wave, waves, func() bool { return c.Retries() > 0 }) {
		calls++
		if o.err != nil {
			t.Fatalf("call %d of the flood failed despite retries (%d so far): %v", calls, c.Retries(), o.err)
		}
	}
	if c.Retries() == 0 {
		t.Fatalf("%d calls, none retried", calls)
	}
	t.Logf("flood: %d calls completed, %d retries", calls, c.Retries())
}

// attempts counts what gRPC sends, each attempt of a call (its retries included): a stats
// handler sees them below the retries, where no interceptor does.
type attempts struct{ n atomic.Int64 }

func (a *attempts) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (a *attempts) HandleRPC(_ context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.Begin); ok {
		a.n.Add(1)
	}
}
func (a *attempts) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (a *attempts) HandleConn(context.Context, stats.ConnStats)                       {}

// What docs/clients.md offers instead of the client's retries: the same document as the
// channel's service config, the client's policy off. gRPC-Go's own retries then carry every
// call of a flood the decider sheds, on whichever gRPC-Go the module is built with; with the
// backoff raised to 5 s the run still takes about as long (logged), since a pushback, not the
// backoff, sets each wait.
func TestGRPCsOwnRetriesWithTheServiceConfig(t *testing.T) {
	for name, config := range map[string]string{
		"the shipped policy": decider.RetryServiceConfig,
		"backoff 5 s": strings.NewReplacer(`"initialBackoff": "0.1s"`, `"initialBackoff": "5s"`,
			`"maxBackoff": "1s"`, `"maxBackoff": "5s"`).Replace(decider.RetryServiceConfig),
	} {
		t.Run(name, func(t *testing.T) {
			if config == decider.RetryServiceConfig && name != "the shipped policy" {
				t.Fatalf("the backoff was not replaced in %s", config)
			}
			address := decidertest.Serve(t, "--workers", "1", "--max-pending", "1")
			req, err := decider.NewDecideRequest(decider.DecideInput{JobSet: example(t, "leader-workers.yaml")[0], Now: now})
			if err != nil {
				t.Fatal(err)
			}
			sent := &attempts{}
			c := dial(t, address, decider.Options{Retry: &decider.NoRetry, DialOptions: []grpc.DialOption{
				grpc.WithDefaultServiceConfig(config), grpc.WithStatsHandler(sent)}})
			const wave, waves = 8, 20
			waved := 0
			retried := func() bool { // more attempts than the calls of the waves sent so far
				if sent.n.Load() > int64(waved*wave) {
					return true
				}
				waved++
				return false
			}
			calls := 0
			started := time.Now()
			for _, o := range flood(c, req, wave, waves, retried) {
				calls++
				if o.err != nil {
					t.Fatalf("call %d of the flood failed despite gRPC's retries (%d attempts so far): %v",
						calls, sent.n.Load(), o.err)
				}
			}
			took := time.Since(started)
			retries := sent.n.Load() - int64(calls)
			if retries <= 0 {
				t.Fatalf("%d calls, %d attempts: gRPC retried none (or the decider shed none)", calls, sent.n.Load())
			}
			if c.Retries() != 0 {
				t.Fatalf("the client's own policy is off, yet it retried %d times", c.Retries())
			}
			t.Logf("gRPC-Go %s, %s: %d calls answered, %d retries by gRPC, in %s", grpc.Version, name,
				calls, retries, took.Round(100*time.Millisecond))
		})
	}
}
