package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/rs/cors"
)

// bodyReadTimeout bounds the reading of a request body of unknown length.
const bodyReadTimeout = 30 * time.Second

// Guard is what stands between the internet and the transcoder: origins, methods, sizes
// and rates. Every refusal is written in the caller's own protocol (Connect, gRPC-Web or
// gRPC) with a precise code, and logged.
type Guard struct {
	// public maps each public method's path to whether it is a server stream.
	public  map[string]bool
	origins map[string]bool
	// hosts are the host:port values the edge is reached by; its own origin is http(s) on
	// one of them. Empty: the request's Host is trusted (tests, and an edge on 0.0.0.0 told
	// no public host).
	hosts   map[string]bool
	limits  Limits
	limiter *Limiter
	cors    *cors.Cors
	errors  *connect.ErrorWriter
	log     *slog.Logger
}

// NewGuard allows the given public methods (path -> server stream), from the given
// browser origins.
func NewGuard(public map[string]bool, origins []string, limits Limits, log *slog.Logger) *Guard {
	g := &Guard{
		public:  public,
		origins: map[string]bool{},
		limits:  limits,
		hosts:   map[string]bool{},
		limiter: NewLimiter(limits),
		errors:  connect.NewErrorWriter(),
		log:     log,
	}
	for _, o := range origins {
		g.origins[strings.TrimSuffix(o, "/")] = true
	}
	g.cors = cors.New(cors.Options{
		AllowOriginFunc: g.originAllowed,
		AllowedMethods:  []string{http.MethodPost},
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

// SetHosts names the host:port values the edge is reached by (see Guard.hosts).
func (g *Guard) SetHosts(hosts []string) {
	for _, h := range hosts {
		g.hosts[h] = true
	}
}

// HostAllowed: a request's Host is one the edge is reached by. A page on another name that
// resolves here (DNS rebinding) is refused, whatever Origin it sends.
func (g *Guard) HostAllowed(host string) bool {
	return len(g.hosts) == 0 || g.hosts[host]
}

// sameOrigin: the page the edge itself serves.
func (g *Guard) sameOrigin(r *http.Request, origin string) bool {
	if len(g.hosts) == 0 {
		return origin == "http://"+r.Host || origin == "https://"+r.Host
	}
	for h := range g.hosts {
		if origin == "http://"+h || origin == "https://"+h {
			return true
		}
	}
	return false
}

// compressed: the request body is compressed. The edge takes none: the transcoder would
// inflate it before any limit applied (61 KB of gzip became 128 MB), and browsers' Connect
// and gRPC-Web clients send requests uncompressed.
func compressed(r *http.Request) bool {
	for _, name := range []string{"Content-Encoding", "Connect-Content-Encoding", "Grpc-Encoding"} {
		if v := r.Header.Get(name); v != "" && v != "identity" {
			return true
		}
	}
	return false
}

// stripInternalHeaders drops the metadata the services exchange among themselves
// (x-electric-*, such as the table's forwarding mark): only a service may set it.
func stripInternalHeaders(r *http.Request) {
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-electric-") {
			r.Header.Del(name)
		}
	}
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
		if compressed(r) {
			g.refuse(w, r, connect.CodeUnimplemented, "compressed",
				"compressed requests are not accepted: send identity")
			return
		}
		if g.limits.MaxRequestBytes > 0 {
			if r.ContentLength > g.limits.MaxRequestBytes {
				g.refuse(w, r, connect.CodeResourceExhausted, "too_large",
					"request larger than the edge's limit")
				return
			}
		}
		release, ok := g.limiter.Admit(r, stream)
		if !ok {
			g.refuse(w, r, connect.CodeResourceExhausted, "rate", "too many calls: slow down")
			return
		}
		defer release()
		if g.limits.MaxRequestBytes > 0 && !g.boundBody(w, r) {
			return
		}
		stripInternalHeaders(r)
		next.ServeHTTP(w, r)
	})
	return g.Origins(g.cors.Handler(checked))
}

// Origins refuses a request from an Origin that is neither the edge's own nor on the list
// (a preflight with 403 and no CORS headers).
func (g *Guard) Origins(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !g.sameOrigin(r, origin) && !g.originAllowed(origin) {
			if r.Method == http.MethodOptions {
				g.log.Warn("refused", "reason", "origin", "origin", origin, "path", r.URL.Path)
				w.WriteHeader(http.StatusForbidden)
				return
			}
			g.refuse(w, r, connect.CodePermissionDenied, "origin", "origin not allowed")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Hosts refuses a request whose Host the edge is not reached by.
func (g *Guard) Hosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.HostAllowed(r.Host) {
			g.refuse(w, r, connect.CodePermissionDenied, "host", "unknown host")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Dev guards the development sign-in: the edge's own page (or a listed origin) only, a JSON
// body of at most 4 KiB (a form post cannot send one without a preflight), and the address
// budget of the RPCs.
func (g *Guard) Dev(next http.Handler) http.Handler {
	return g.Origins(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			http.Error(w, "sign-in takes application/json", http.StatusUnsupportedMediaType)
			return
		}
		release, ok := g.limiter.Admit(r, false)
		if !ok {
			http.Error(w, "too many sign-ins: slow down", http.StatusTooManyRequests)
			return
		}
		defer release()
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		next.ServeHTTP(w, r)
	}))
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
	// A sender that stalls mid-body must not hold the call (and its stream slot) forever.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if err != nil {
		code := connect.CodeInvalidArgument
		if r.Context().Err() != nil {
			code = connect.CodeCanceled
		}
		g.refuse(w, r, code, "body", "the request body could not be read")
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
