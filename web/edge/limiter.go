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

// addressStreams: one address may hold this many times -max-streams open at once (several
// players behind one address, each with its own streams).
const addressStreams = 4

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

// Admit takes one call from the caller's budget and its address's (and a stream slot of
// each when stream); release gives the slots back when the call ends.
//
// The address is looked at first but spent last: a call its address cannot pay for creates
// no caller (so rotating subjects grows nothing), and a call its caller's budget refuses
// costs the address nothing (so one throttled player behind a shared address does not lock
// out the others).
func (l *Limiter) Admit(r *http.Request, stream bool) (release func(), ok bool) {
	address := remoteHost(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.sweep(now)
	var a *bucket
	if l.limits.AddressRate > 0 {
		a = l.bucket("addr:"+address, l.limits.AddressRate, l.limits.AddressBurst, now)
		if a.limiter.TokensAt(now) < 1 {
			return nil, false
		}
		if stream && l.limits.MaxStreams > 0 && a.streams >= addressStreams*l.limits.MaxStreams {
			return nil, false
		}
	}
	c := l.bucket("caller:"+address+"|"+subject(r), l.limits.Rate, l.limits.Burst, now)
	if l.limits.Rate > 0 && !c.limiter.AllowN(now, 1) {
		return nil, false
	}
	if stream && l.limits.MaxStreams > 0 && c.streams >= l.limits.MaxStreams {
		return nil, false
	}
	if a != nil {
		a.limiter.AllowN(now, 1)
	}
	if !stream {
		return func() {}, true
	}
	held := []*bucket{c}
	if a != nil {
		held = append(held, a)
	}
	for _, b := range held {
		b.streams++
	}
	return func() {
		l.mu.Lock()
		for _, b := range held {
			b.streams--
			b.seen = time.Now()
		}
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
	// The scheme is case-insensitive (RFC 9110), as the services read it.
	header := r.Header.Get("Authorization")
	if len(header) < 7 || !strings.EqualFold(header[:7], "bearer ") {
		return ""
	}
	token := header[7:]
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
