package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	unaryPath  = "/electric.test.v1.TestService/Get"
	streamPath = "/electric.test.v1.TestService/Watch"
	allowed    = "https://play.electric.test"
	foreign    = "https://evil.test"
)

// stub is the next handler: it records what reached it and, for the stream path, holds the
// call open until release is closed.
type stub struct {
	mu      sync.Mutex
	calls   int
	bodies  [][]byte
	lengths []int64
	release chan struct{}
	entered chan struct{}
}

func newStub() *stub {
	return &stub{release: make(chan struct{}), entered: make(chan struct{}, 16)}
}

func (s *stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.calls++
	s.bodies = append(s.bodies, body)
	s.lengths = append(s.lengths, r.ContentLength)
	s.mu.Unlock()
	if r.URL.Path == streamPath {
		s.entered <- struct{}{}
		<-s.release
	}
	w.Header().Set("Content-Type", "application/proto")
	w.WriteHeader(http.StatusOK)
}

func (s *stub) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func newGuarded(limits Limits, origins ...string) (http.Handler, *stub) {
	next := newStub()
	public := map[string]bool{unaryPath: false, streamPath: true}
	return NewGuard(public, origins, limits, quietLog()).Wrap(next), next
}

var roomy = Limits{MaxRequestBytes: 1 << 10, Rate: 1000, Burst: 1000, MaxStreams: 16}

// connectRequest is a Connect unary call (binary codec) of size bytes, from origin.
func connectRequest(path, origin string, size int) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://edge.test"+path, bytes.NewReader(make([]byte, size)))
	r.Header.Set("Content-Type", "application/proto")
	r.Header.Set("Connect-Protocol-Version", "1")
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	return r
}

func withToken(r *http.Request, sub string) *http.Request {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + sub + `","role":"player"}`))
	r.Header.Set("Authorization", "Bearer eyJhbGciOiJFZERTQSJ9."+payload+".c2ln")
	return r
}

// connectCode is the Connect error code of a response ("" for a success).
func connectCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if w.Code == http.StatusOK {
		return ""
	}
	var body struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("not a Connect error (%d): %q", w.Code, w.Body.String())
	}
	return body.Code
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func preflight(origin, headers string) *http.Request {
	r := httptest.NewRequest(http.MethodOptions, "http://edge.test"+unaryPath, nil)
	r.Header.Set("Origin", origin)
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Headers", headers)
	return r
}

func TestForeignOriginsAreRefused(t *testing.T) {
	h, next := newGuarded(roomy, allowed)
	w := serve(h, connectRequest(unaryPath, foreign, 4))
	if code := connectCode(t, w); code != "permission_denied" {
		t.Errorf("foreign POST: %q", code)
	}
	if w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign POST got CORS headers: %v", w.Header())
	}
	w = serve(h, preflight(foreign, "authorization,connect-protocol-version,content-type"))
	if w.Code != http.StatusForbidden {
		t.Errorf("foreign preflight: %d", w.Code)
	}
	for key := range w.Header() {
		if strings.HasPrefix(strings.ToLower(key), "access-control-") {
			t.Errorf("foreign preflight got %s", key)
		}
	}
	if next.count() != 0 {
		t.Errorf("a refused request reached the transcoder")
	}
}

func TestAllowedOriginsGetCorsAndSameOriginPasses(t *testing.T) {
	h, next := newGuarded(roomy, allowed+"/") // a trailing slash on the flag is tolerated
	for _, headers := range []string{
		"authorization,connect-protocol-version,connect-timeout-ms,content-type",
		"authorization,content-type,grpc-timeout,x-grpc-web,x-user-agent",
	} {
		w := serve(h, preflight(allowed, headers))
		if w.Code != http.StatusNoContent && w.Code != http.StatusOK {
			t.Errorf("allowed preflight: %d", w.Code)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != allowed {
			t.Errorf("allowed preflight: Access-Control-Allow-Origin %q", got)
		}
		if got := w.Header().Get("Access-Control-Allow-Headers"); got != headers {
			t.Errorf("allowed preflight: Access-Control-Allow-Headers %q, want %q", got, headers)
		}
	}
	// A header outside the protocols' set is not allowed.
	w := serve(h, preflight(allowed, "authorization,x-secret"))
	if w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a preflight asking for x-secret was allowed")
	}
	w = serve(h, connectRequest(unaryPath, allowed, 4))
	if w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != allowed {
		t.Errorf("allowed POST: %d %v", w.Code, w.Header())
	}
	if !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "Grpc-Status-Details-Bin") {
		t.Errorf("error details are not exposed: %v", w.Header())
	}
	// Same origin (the edge's own page) and no Origin (not a browser) pass.
	for _, origin := range []string{"http://edge.test", "https://edge.test", ""} {
		if w := serve(h, connectRequest(unaryPath, origin, 4)); w.Code != http.StatusOK {
			t.Errorf("origin %q: %d %s", origin, w.Code, w.Body.String())
		}
	}
	if next.count() != 4 {
		t.Errorf("calls that reached the transcoder: %d, want 4", next.count())
	}
}

func TestUnknownAndInternalMethodsAreUnimplemented(t *testing.T) {
	h, next := newGuarded(roomy)
	for _, path := range []string{"/electric.test.v1.TestService/Other", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "/"} {
		if code := connectCode(t, serve(h, connectRequest(path, "", 0))); code != "unimplemented" {
			t.Errorf("%s: %q", path, code)
		}
	}
	// The refusal speaks gRPC-Web to a gRPC-Web caller, plain HTTP to anything else.
	r := connectRequest("/x.Y/Z", "", 0)
	r.Header.Set("Content-Type", "application/grpc-web+proto")
	w := serve(h, r)
	if got := w.Header().Get("Grpc-Status"); got != "12" {
		t.Errorf("gRPC-Web refusal: grpc-status %q", got)
	}
	r = connectRequest("/x.Y/Z", "", 0)
	r.Header.Set("Content-Type", "text/plain")
	if w := serve(h, r); w.Code != http.StatusNotFound {
		t.Errorf("plain HTTP refusal: %d", w.Code)
	}
	if next.count() != 0 {
		t.Error("an unknown method reached the transcoder")
	}
}

func TestRequestSizeIsBounded(t *testing.T) {
	h, next := newGuarded(roomy)
	if code := connectCode(t, serve(h, connectRequest(unaryPath, "", 1025))); code != "resource_exhausted" {
		t.Errorf("declared oversize: %q", code)
	}
	// Without a Content-Length (chunked) the body is read, bounded, before the call goes on.
	chunked := connectRequest(unaryPath, "", 0)
	chunked.ContentLength = -1
	chunked.Body = io.NopCloser(bytes.NewReader(make([]byte, 5000)))
	if code := connectCode(t, serve(h, chunked)); code != "resource_exhausted" {
		t.Errorf("chunked oversize: %q", code)
	}
	if next.count() != 0 {
		t.Fatal("an oversized request reached the transcoder")
	}
	small := connectRequest(unaryPath, "", 0)
	small.ContentLength = -1
	small.Body = io.NopCloser(strings.NewReader("hello"))
	if w := serve(h, small); w.Code != http.StatusOK {
		t.Fatalf("chunked small body: %d", w.Code)
	}
	exact := serve(h, connectRequest(unaryPath, "", 1024))
	if exact.Code != http.StatusOK {
		t.Errorf("a body of exactly the limit: %d", exact.Code)
	}
	if string(next.bodies[0]) != "hello" || next.lengths[0] != 5 || len(next.bodies[1]) != 1024 {
		t.Errorf("bodies passed on: %q %v", next.bodies[0], next.lengths)
	}
}

func TestRatesArePerCaller(t *testing.T) {
	h, _ := newGuarded(Limits{MaxRequestBytes: 1024, Rate: 0.001, Burst: 2, MaxStreams: 4})
	for i := 0; i < 2; i++ {
		if w := serve(h, withToken(connectRequest(unaryPath, "", 1), "alice")); w.Code != http.StatusOK {
			t.Fatalf("call %d within the burst: %d", i, w.Code)
		}
	}
	if code := connectCode(t, serve(h, withToken(connectRequest(unaryPath, "", 1), "alice"))); code != "resource_exhausted" {
		t.Errorf("past the burst: %q", code)
	}
	if w := serve(h, withToken(connectRequest(unaryPath, "", 1), "bob")); w.Code != http.StatusOK {
		t.Errorf("another caller: %d", w.Code)
	}
	// Without a token the caller is the remote address.
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		w := serve(h, connectRequest(unaryPath, "", 1))
		if w.Code != want {
			t.Errorf("anonymous call %d: %d, want %d", i, w.Code, want)
		}
	}
}

func TestSubjectAndRemoteHost(t *testing.T) {
	r := withToken(connectRequest(unaryPath, "", 0), "alice")
	if got := subject(r); got != "alice" {
		t.Errorf("with token: %q", got)
	}
	r.Header.Set("Authorization", "Bearer not.a-jwt!.x")
	r.RemoteAddr = "10.1.2.3:4567"
	if got, host := subject(r), remoteHost(r); got != "" || host != "10.1.2.3" {
		t.Errorf("garbage token: %q from %q", got, host)
	}
}

func TestStreamSlotsAreBoundedAndReleased(t *testing.T) {
	h, next := newGuarded(Limits{MaxRequestBytes: 1024, Rate: 1000, Burst: 1000, MaxStreams: 1})
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- serve(h, withToken(connectRequest(streamPath, "", 1), "alice")) }()
	select {
	case <-next.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first stream never started")
	}
	if code := connectCode(t, serve(h, withToken(connectRequest(streamPath, "", 1), "alice"))); code != "resource_exhausted" {
		t.Errorf("second stream: %q", code)
	}
	// Unary calls and other callers' streams are not counted against alice's slot.
	if w := serve(h, withToken(connectRequest(unaryPath, "", 1), "alice")); w.Code != http.StatusOK {
		t.Errorf("unary call beside the stream: %d", w.Code)
	}
	bob := make(chan *httptest.ResponseRecorder, 1)
	go func() { bob <- serve(h, withToken(connectRequest(streamPath, "", 1), "bob")) }()
	select {
	case <-next.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("bob's stream never started")
	}
	close(next.release) // every open stream ends
	if w := <-first; w.Code != http.StatusOK {
		t.Errorf("first stream: %d", w.Code)
	}
	<-bob
	// The slot is free again.
	if w := serve(h, withToken(connectRequest(streamPath, "", 1), "alice")); w.Code != http.StatusOK {
		t.Errorf("stream after the first ended: %d", w.Code)
	}
}
