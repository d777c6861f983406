package main

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits are what one caller may spend at the edge.
//
// A caller is a remote address together with the bearer token's subject. The subject is
// read, not verified: the services verify every token. So a forged subject only ever spends
// the forger's own budget: it cannot drain another player's, whose calls come from another
// address. And the address's own budget, checked first, stops one address from escaping the
// limits by changing subjects.
type Limits struct {
	// MaxRequestBytes bounds a request body.
	MaxRequestBytes int64
	// Rate and Burst bound calls per second per caller (a stream counts once, at its start).
	Rate  float64
	Burst int
	// AddressRate and AddressBurst bound calls per second per remote address, whatever
	// tokens they carry.
	AddressRate  float64
	AddressBurst int
	// MaxStreams bounds the server streams one caller holds open at once.
	MaxStreams int
}

// idleCaller is how long a caller with no open stream is remembered.
const idleCaller = 2 * time.Minute

// sweepEvery is how often forgotten callers are cleared out (at most; on the next call).
const sweepEvery = 30 * time.Second

type bucket struct {
	limiter *rate.Limiter
	streams int
	seen    time.Time
}

// Limiter holds the buckets of addresses and callers.
type Limiter struct {
	limits Limits

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

// NewLimiter makes the buckets' keeper.
func NewLimiter(limits Limits) *Limiter {
	return &Limiter{limits: limits, buckets: map[string]*bucket{}, lastSweep: time.Now()}
}

// Admit takes one call from the address's budget, then from the caller's (and a stream
// slot when stream); release gives the slot back when the call ends.
func (l *Limiter) Admit(r *http.Request, stream bool) (release func(), ok bool) {
	address := remoteHost(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.sweep(now)
	if l.limits.AddressRate > 0 {
		a := l.bucket("addr:"+address, l.limits.AddressRate, l.limits.AddressBurst, now)
		if !a.limiter.AllowN(now, 1) {
			return nil, false
		}
	}
	c := l.bucket("caller:"+address+"|"+subject(r), l.limits.Rate, l.limits.Burst, now)
	if l.limits.Rate > 0 && !c.limiter.AllowN(now, 1) {
		return nil, false
	}
	if !stream {
		return func() {}, true
	}
	if l.limits.MaxStreams > 0 && c.streams >= l.limits.MaxStreams {
		return nil, false
	}
	c.streams++
	return func() {
		l.mu.Lock()
		c.streams--
		c.seen = time.Now()
		l.mu.Unlock()
	}, true
}

func (l *Limiter) bucket(key string, perSecond float64, burst int, now time.Time) *bucket {
	b := l.buckets[key]
	if b == nil {
		b = &bucket{limiter: rate.NewLimiter(rate.Limit(perSecond), burst)}
		l.buckets[key] = b
	}
	b.seen = now
	return b
}

// sweep forgets buckets idle for idleCaller with no stream open, every sweepEvery at most:
// the map holds what the addresses' budgets let in over a couple of minutes, no more.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < sweepEvery {
		return
	}
	l.lastSweep = now
	for key, b := range l.buckets {
		if b.streams == 0 && now.Sub(b.seen) > idleCaller {
			delete(l.buckets, key)
		}
	}
}

// Size is the number of buckets held (for tests).
func (l *Limiter) Size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// subject is the bearer token's `sub`, read only to key the limiter ("" without one).
func subject(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Sub
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
