package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/rs/cors"
	"golang.org/x/time/rate"
)

// Limits are what one caller may spend at the edge. A caller is the token's subject (read,
// not verified: the services verify every token) or, without a token, the remote address.
type Limits struct {
	// MaxRequestBytes bounds a request body; a larger one is refused before it is read.
	MaxRequestBytes int64
	// Rate and Burst bound calls per second per caller (a stream counts once, at its start).
	Rate  float64
	Burst int
	// MaxStreams bounds the server streams one caller holds open at once.
	MaxStreams int
}

// Guard is what stands between the internet and the transcoder: origins, methods, sizes
// and rates. Every refusal is written in the caller's own protocol (Connect, gRPC-Web or
// gRPC) with a precise code, and logged.
type Guard struct {
	// public maps each public method's path to whether it is a server stream.
	public  map[string]bool
	origins map[string]bool
	limits  Limits
	cors    *cors.Cors
	errors  *connect.ErrorWriter
	log     *slog.Logger

	mu      sync.Mutex
	callers map[string]*caller
}

type caller struct {
	limiter *rate.Limiter
	streams int
	seen    time.Time
}

// NewGuard allows the given public methods (path -> server stream), from the given
// browser origins.
func NewGuard(public map[string]bool, origins []string, limits Limits, log *slog.Logger) *Guard {
	g := &Guard{
		public:  public,
		origins: map[string]bool{},
		limits:  limits,
		errors:  connect.NewErrorWriter(),
		log:     log,
		callers: map[string]*caller{},
	}
	for _, o := range origins {
		g.origins[strings.TrimSuffix(o, "/")] = true
	}
	g.cors = cors.New(cors.Options{
		AllowOriginFunc: g.originAllowed,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost},
		// The request headers of the Connect, gRPC-Web and gRPC protocols, and the token.
		AllowedHeaders: []string{
			"Authorization", "Content-Type", "Connect-Protocol-Version", "Connect-Timeout-Ms",
			"Connect-Accept-Encoding", "Connect-Content-Encoding", "Grpc-Timeout",
			"X-Grpc-Web", "X-User-Agent",
		},
		// The response headers a browser script must be able to read to see an error.
		ExposedHeaders: []string{
			"Grpc-Status", "Grpc-Message", "Grpc-Status-Details-Bin",
			"Connect-Content-Encoding", "Content-Encoding",
		},
		MaxAge: 7200,
	})
	return g
}

// originAllowed: an origin on the list. Same-origin requests (the page the edge serves)
// are let through before this is asked.
func (g *Guard) originAllowed(origin string) bool {
	return g.origins[origin]
}

func sameOrigin(r *http.Request, origin string) bool {
	return origin == "http://"+r.Host || origin == "https://"+r.Host
}

// Wrap puts the guard in front of next (the transcoder).
func (g *Guard) Wrap(next http.Handler) http.Handler {
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			// A preflight from an allowed origin was answered by the CORS handler.
			w.WriteHeader(http.StatusForbidden)
			return
		}
		stream, public := g.public[r.URL.Path]
		if !public {
			g.refuse(w, r, connect.CodeUnimplemented, "not_public", "method not served here")
			return
		}
		if g.limits.MaxRequestBytes > 0 {
			if r.ContentLength > g.limits.MaxRequestBytes {
				g.refuse(w, r, connect.CodeResourceExhausted, "too_large",
					"request larger than the edge's limit")
				return
			}
		}
		key := callerKey(r)
		release, ok := g.admit(key, stream)
		if !ok {
			g.refuse(w, r, connect.CodeResourceExhausted, "rate", "too many calls: slow down")
			return
		}
		defer release()
		if g.limits.MaxRequestBytes > 0 && !g.boundBody(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
	withCors := g.cors.Handler(checked)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !sameOrigin(r, origin) && !g.originAllowed(origin) {
			if r.Method == http.MethodOptions {
				g.log.Warn("refused", "reason", "origin", "origin", origin, "path", r.URL.Path)
				w.WriteHeader(http.StatusForbidden)
				return
			}
			g.refuse(w, r, connect.CodePermissionDenied, "origin", "origin not allowed")
			return
		}
		withCors.ServeHTTP(w, r)
	})
}

// boundBody enforces MaxRequestBytes on a body of unknown length (chunked: gRPC-Web and
// Connect streaming clients send no Content-Length). Every public method takes exactly one
// request message, so the whole body is read here, at most the limit plus one byte: a larger
// one is refused with RESOURCE_EXHAUSTED. (Cut later, while the transcoder streamed it to the
// service, the failed read came back as UNAVAILABLE "service unavailable".) A body of known
// length was checked against the limit already and is still bounded while it is read.
func (g *Guard) boundBody(w http.ResponseWriter, r *http.Request) bool {
	limit := g.limits.MaxRequestBytes
	if r.ContentLength >= 0 {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		g.refuse(w, r, connect.CodeCanceled, "body", "the request body could not be read")
		return false
	}
	if int64(len(body)) > limit {
		g.refuse(w, r, connect.CodeResourceExhausted, "too_large",
			"request larger than the edge's limit")
		return false
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return true
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, code connect.Code, reason, msg string) {
	g.log.Warn("refused", "reason", reason, "path", r.URL.Path, "origin", r.Header.Get("Origin"),
		"remote", r.RemoteAddr, "code", code.String())
	err := connect.NewError(code, errors.New(msg))
	if g.errors.IsSupported(r) {
		_ = g.errors.Write(w, r, err)
		return
	}
	// Not an RPC content type at all: plain HTTP.
	status := http.StatusBadRequest
	switch code {
	case connect.CodeUnimplemented:
		status = http.StatusNotFound
	case connect.CodePermissionDenied:
		status = http.StatusForbidden
	case connect.CodeResourceExhausted:
		status = http.StatusTooManyRequests
	}
	http.Error(w, msg, status)
}

// admit takes one call of key's rate (and a stream slot when stream); release gives the
// slot back when the call ends.
func (g *Guard) admit(key string, stream bool) (release func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	c := g.callers[key]
	if c == nil {
		g.sweep(now)
		c = &caller{limiter: rate.NewLimiter(rate.Limit(g.limits.Rate), g.limits.Burst)}
		g.callers[key] = c
	}
	c.seen = now
	if g.limits.Rate > 0 && !c.limiter.AllowN(now, 1) {
		return nil, false
	}
	if !stream {
		return func() {}, true
	}
	if g.limits.MaxStreams > 0 && c.streams >= g.limits.MaxStreams {
		return nil, false
	}
	c.streams++
	return func() {
		g.mu.Lock()
		c.streams--
		c.seen = time.Now()
		g.mu.Unlock()
	}, true
}

// sweep forgets callers idle for 10 minutes (with no stream open), so the map stays small.
func (g *Guard) sweep(now time.Time) {
	if len(g.callers) < 1024 {
		return
	}
	for key, c := range g.callers {
		if c.streams == 0 && now.Sub(c.seen) > 10*time.Minute {
			delete(g.callers, key)
		}
	}
}

// callerKey: the bearer token's subject when there is one, else the remote address. The
// payload is decoded only to key the limiter; a forged subject gains nothing, because the
// services refuse a token they cannot verify.
func callerKey(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if token, ok := strings.CutPrefix(auth, "Bearer "); ok {
		parts := strings.Split(token, ".")
		if len(parts) == 3 {
			if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
				var claims struct {
					Sub string `json:"sub"`
				}
				if json.Unmarshal(payload, &claims) == nil && claims.Sub != "" {
					return "sub:" + claims.Sub
				}
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}
