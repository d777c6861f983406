// Command electric-edge is the browser edge of the Electric Poker platform: it serves the
// reference web client and translates the Connect and gRPC-Web protocols a browser can speak
// into the native gRPC the four services speak, through Connect's vanguard transcoder.
//
// Only the methods the protos mark EXPOSURE_PUBLIC are served; browser origins come from an
// allow-list; request sizes, call rates and open streams are bounded per caller. Tokens,
// deadlines and errors (status and details) pass through unchanged, so a browser call
// behaves as a native one. See docs/web-edge.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Config is the edge's command line.
type Config struct {
	Listen      string
	Descriptors string
	// Backends maps a proto package ("electric.table.v1") to the host:port serving it.
	Backends map[string]string
	Origins  []string
	// Hosts are the host:port values the edge is reached by (-public-host, else its listen
	// address, and localhost for a loopback one).
	Hosts       []string
	Static      string
	DevUpstream string
	Limits      Limits
	PrintPublic bool
	// StdinEOF: stop when standard input closes (a parent that dies takes the edge along).
	StdinEOF bool
}

func parseConfig(args []string) (Config, error) {
	fs := flag.NewFlagSet("electric-edge", flag.ContinueOnError)
	cfg := Config{Backends: map[string]string{}}
	var backends, origins, hosts listFlag
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "host:port to serve on")
	fs.StringVar(&cfg.Descriptors, "descriptors", "gen/electric/descriptor_set.pb",
		"FileDescriptorSet of the platform's protos, with imports")
	fs.Var(&backends, "backend", "PACKAGE=HOST:PORT, e.g. electric.table.v1=127.0.0.1:50052 (repeat)")
	fs.Var(&origins, "allow-origin", "a browser origin allowed besides the edge's own (repeat)")
	fs.Var(&hosts, "public-host", "a HOST:PORT browsers reach the edge by (repeat; default: "+
		"the listen address, and localhost:PORT for a loopback one)")
	fs.StringVar(&cfg.Static, "static", "", "directory of the web client's built files")
	fs.StringVar(&cfg.DevUpstream, "dev-upstream", "",
		"URL that /dev/ is forwarded to (the embedded runner's development sign-in)")
	fs.Int64Var(&cfg.Limits.MaxRequestBytes, "max-request-bytes", 64<<10, "largest request body")
	fs.Float64Var(&cfg.Limits.Rate, "rate", 50, "calls per second per caller")
	fs.IntVar(&cfg.Limits.Burst, "burst", 100, "calls a caller may make at once above the rate")
	fs.IntVar(&cfg.Limits.MaxStreams, "max-streams", 16, "open server streams per caller")
	fs.Float64Var(&cfg.Limits.AddressRate, "address-rate", -1,
		"calls per second per remote address, whatever its tokens (default 4x -rate)")
	fs.IntVar(&cfg.Limits.AddressBurst, "address-burst", -1,
		"calls a remote address may make at once above its rate (default 4x -burst)")
	fs.BoolVar(&cfg.StdinEOF, "exit-on-stdin-eof", false, "stop when standard input closes")
	fs.BoolVar(&cfg.PrintPublic, "print-public", false, "print the public methods and exit")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	for _, b := range backends {
		pkg, addr, ok := strings.Cut(b, "=")
		if !ok || pkg == "" || addr == "" {
			return cfg, fmt.Errorf("-backend %q: want PACKAGE=HOST:PORT", b)
		}
		cfg.Backends[pkg] = addr
	}
	cfg.Origins = origins
	cfg.Hosts = hosts
	if cfg.Limits.AddressRate < 0 {
		cfg.Limits.AddressRate = 4 * cfg.Limits.Rate
	}
	if cfg.Limits.AddressBurst < 0 {
		cfg.Limits.AddressBurst = 4 * cfg.Limits.Burst
	}
	return cfg, nil
}

func main() {
	cfg, err := parseConfig(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "edge")
	if err := run(cfg, log); err != nil {
		log.Error("edge stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(cfg Config, log *slog.Logger) error {
	schema, err := LoadSchema(cfg.Descriptors)
	if err != nil {
		return err
	}
	if cfg.PrintPublic {
		for _, path := range schema.PublicPaths() {
			fmt.Println(path)
		}
		return nil
	}
	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	if len(cfg.Hosts) == 0 {
		cfg.Hosts = listenHosts(listener.Addr().(*net.TCPAddr))
	}
	handler, err := NewHandler(cfg, schema, log)
	if err != nil {
		_ = listener.Close()
		return err
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	// Native gRPC clients (and the tests' probes) may use the edge too, over h2c.
	protocols.SetUnencryptedHTTP2(true)
	server := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		Protocols:         protocols,
	}
	log.Info("edge listening", "url", "http://"+listener.Addr().String()+"/",
		"public_methods", len(schema.Public), "origins", cfg.Origins)
	// The runner reads this line to learn the port when it asked for port 0.
	fmt.Printf("edge listening on %s\n", listener.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.StdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Streams never end by themselves: give unary calls a moment, then close the rest.
	shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil {
		_ = server.Close()
	}
	return nil
}

// NewHandler wires the edge: /healthz, /dev/ (optional), the RPCs and the static files.
func NewHandler(cfg Config, schema *Schema, log *slog.Logger) (http.Handler, error) {
	transcoder, err := newTranscoder(cfg, schema, log)
	if err != nil {
		return nil, err
	}
	public := map[string]bool{}
	for path, method := range schema.Public {
		public[path] = method.IsStreamingServer()
	}
	guard := NewGuard(public, cfg.Origins, cfg.Limits, log)
	guard.SetHosts(cfg.Hosts)
	rpc := guard.Wrap(transcoder)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	if cfg.DevUpstream != "" {
		target, err := url.Parse(cfg.DevUpstream)
		if err != nil {
			return nil, fmt.Errorf("-dev-upstream: %w", err)
		}
		mux.Handle("POST /dev/", guard.Dev(httputil.NewSingleHostReverseProxy(target)))
	}
	// Every RPC protocol posts (Connect unary GET is not enabled); a preflight is OPTIONS.
	mux.Handle("POST /", rpc)
	mux.Handle("OPTIONS /", rpc)
	if cfg.Static != "" {
		mux.Handle("GET /", staticFiles(cfg.Static))
	}
	return guard.Hosts(mux), nil
}

// listenHosts: the host:port values a loopback or specific listen address is reached by.
// An unspecified one (0.0.0.0, as in a container) names none: give -public-host there.
func listenHosts(addr *net.TCPAddr) []string {
	if addr.IP.IsUnspecified() {
		return nil
	}
	port := fmt.Sprint(addr.Port)
	hosts := []string{net.JoinHostPort(addr.IP.String(), port)}
	if addr.IP.IsLoopback() {
		hosts = append(hosts, net.JoinHostPort("localhost", port))
	}
	return hosts
}

// newTranscoder: one vanguard service per platform service, each sent to its backend as
// gRPC with the proto codec (what grpcio serves), so vanguard only re-frames binary calls.
func newTranscoder(cfg Config, schema *Schema, log *slog.Logger) (http.Handler, error) {
	var services []*vanguard.Service
	backends := map[string]http.Handler{}
	for _, service := range schema.Services {
		pkg := string(service.ParentFile().Package())
		addr, ok := cfg.Backends[pkg]
		if !ok {
			if hasPublic(schema, service) {
				return nil, fmt.Errorf("no -backend for %s (serves %s)", pkg, service.FullName())
			}
			continue
		}
		backend := backends[addr]
		if backend == nil {
			backend = grpcBackend(addr, log)
			backends[addr] = backend
		}
		services = append(services, vanguard.NewServiceWithSchema(service, backend,
			vanguard.WithTargetProtocols(vanguard.ProtocolGRPC),
			vanguard.WithTargetCodecs(vanguard.CodecProto),
			vanguard.WithNoTargetCompression(),
			vanguard.WithMaxMessageBufferBytes(uint32(max(cfg.Limits.MaxRequestBytes, 4<<20))),
		))
	}
	return vanguard.NewTranscoder(services)
}

func hasPublic(schema *Schema, service protoreflect.ServiceDescriptor) bool {
	methods := service.Methods()
	for i := 0; i < methods.Len(); i++ {
		if _, ok := schema.Public[MethodPath(methods.Get(i))]; ok {
			return true
		}
	}
	return false
}

// grpcBackend forwards gRPC over cleartext HTTP/2 to addr, flushing every frame at once
// (server streams) and answering UNAVAILABLE when the service cannot be reached.
func grpcBackend(addr string, log *slog.Logger) http.Handler {
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	transport.Protocols = protocols
	errs := connect.NewErrorWriter()
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = addr
			r.Out.Host = addr
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			log.Warn("backend unreachable", "backend", addr, "path", r.URL.Path, "error", err.Error())
			_ = errs.Write(w, r, connect.NewError(connect.CodeUnavailable, errors.New("service unavailable")))
		},
	}
}

// staticFiles serves the built client with headers that keep it to its own origin.
func staticFiles(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy",
			"default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
