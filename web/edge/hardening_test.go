package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCompressedRequestsAreRefusedBeforeTheyAreInflated(t *testing.T) {
	h, next := newGuarded(roomy)
	for _, header := range []string{"Content-Encoding", "Connect-Content-Encoding", "Grpc-Encoding"} {
		r := connectRequest(unaryPath, "", 10)
		r.Header.Set(header, "gzip")
		if code := connectCode(t, serve(h, r)); code != "unimplemented" {
			t.Errorf("%s: gzip answered %q", header, code)
		}
		r = connectRequest(unaryPath, "", 10)
		r.Header.Set(header, "identity")
		if w := serve(h, r); w.Code != http.StatusOK {
			t.Errorf("%s: identity answered %d", header, w.Code)
		}
	}
	if next.count() != 3 {
		t.Errorf("%d calls reached the transcoder, want the 3 uncompressed ones", next.count())
	}
}

func TestAForgedSubjectSpendsOnlyItsOwnAddressBudget(t *testing.T) {
	h, _ := newGuarded(Limits{MaxRequestBytes: 1024, Rate: 0.001, Burst: 1, AddressRate: 0.001, AddressBurst: 3, MaxStreams: 4})
	from := func(addr, sub string) *http.Request {
		r := withToken(connectRequest(unaryPath, "", 1), sub)
		r.RemoteAddr = addr + ":5555"
		return r
	}
	// The forger, at its own address, uses a victim's subject up...
	if w := serve(h, from("10.0.0.66", "victim")); w.Code != http.StatusOK {
		t.Fatalf("first forged call: %d", w.Code)
	}
	if code := connectCode(t, serve(h, from("10.0.0.66", "victim"))); code != "resource_exhausted" {
		t.Errorf("second forged call: %q", code)
	}
	// ...and the victim, from its own address, is untouched.
	if w := serve(h, from("10.0.0.7", "victim")); w.Code != http.StatusOK {
		t.Errorf("the victim's own call: %d", w.Code)
	}
	// Rotating subjects from one address stops at the address's budget: 3, one of them
	// spent above (the call its caller's budget refused cost the address nothing).
	codes := []string{}
	for i := 0; i < 4; i++ {
		codes = append(codes, connectCode(t, serve(h, from("10.0.0.66", fmt.Sprint("s", i)))))
	}
	if fmt.Sprint(codes) != "[  resource_exhausted resource_exhausted]" {
		t.Errorf("rotating subjects: %q", codes)
	}
}

func TestAnAddressHoldsAtMostFourTimesTheStreamsOfACaller(t *testing.T) {
	l := NewLimiter(Limits{Rate: 100, Burst: 100, AddressRate: 100, AddressBurst: 100, MaxStreams: 1})
	var releases []func()
	for i := 0; i < 5; i++ {
		release, ok := l.Admit(withToken(connectRequest(streamPath, "", 0), fmt.Sprint("p", i)), true)
		if ok != (i < addressStreams) {
			t.Fatalf("stream %d admitted: %v", i, ok)
		}
		if ok {
			releases = append(releases, release)
		}
	}
	releases[0]()
	if _, ok := l.Admit(withToken(connectRequest(streamPath, "", 0), "p9"), true); !ok {
		t.Error("a slot freed by a closed stream was not given back to the address")
	}
}

func TestTheBearerSchemeIsCaseInsensitive(t *testing.T) {
	r := withToken(connectRequest(unaryPath, "", 0), "alice")
	r.Header.Set("Authorization", "bearer "+r.Header.Get("Authorization")[7:])
	if got := subject(r); got != "alice" {
		t.Errorf("lower-case scheme: %q", got)
	}
}

func TestTheLimiterForgetsIdleCallers(t *testing.T) {
	l := NewLimiter(Limits{Rate: 10, Burst: 10, AddressRate: 100, AddressBurst: 100})
	for i := 0; i < 50; i++ {
		r := withToken(connectRequest(unaryPath, "", 0), fmt.Sprint("p", i))
		release, ok := l.Admit(r, false)
		if !ok {
			t.Fatalf("call %d refused", i)
		}
		release()
	}
	if l.Size() != 51 { // one address, 50 callers
		t.Fatalf("%d buckets", l.Size())
	}
	l.mu.Lock()
	for _, b := range l.buckets {
		b.seen = b.seen.Add(-2 * idleCaller)
	}
	l.lastSweep = l.lastSweep.Add(-2 * sweepEvery)
	l.mu.Unlock()
	release, _ := l.Admit(connectRequest(unaryPath, "", 0), false)
	release()
	if l.Size() != 2 { // the address and the anonymous caller of the last call
		t.Errorf("%d buckets after the sweep", l.Size())
	}
}

func TestUnknownHostsAreRefused(t *testing.T) {
	next := newStub()
	g := NewGuard(map[string]bool{unaryPath: false}, nil, roomy, quietLog())
	g.SetHosts([]string{"127.0.0.1:8080", "localhost:8080"})
	h := g.Hosts(g.Wrap(next))
	// A rebinding page: another name for this address, with its own origin.
	r := connectRequest(unaryPath, "http://evil.test:8080", 1)
	r.Host = "evil.test:8080"
	if code := connectCode(t, serve(h, r)); code != "permission_denied" {
		t.Errorf("rebound host: %q", code)
	}
	// The edge's own page, by either name.
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080"} {
		r := connectRequest(unaryPath, "http://"+host, 1)
		r.Host = host
		if w := serve(h, r); w.Code != http.StatusOK {
			t.Errorf("own origin %s: %d", host, w.Code)
		}
	}
	// A known host with a foreign origin is still refused.
	r = connectRequest(unaryPath, "http://evil.test:8080", 1)
	r.Host = "127.0.0.1:8080"
	if code := connectCode(t, serve(h, r)); code != "permission_denied" {
		t.Errorf("foreign origin on a known host: %q", code)
	}
}

func TestDevSignInTakesJsonFromTheEdgesOwnPageOnly(t *testing.T) {
	g := NewGuard(map[string]bool{}, nil, roomy, quietLog())
	g.SetHosts([]string{"127.0.0.1:8080"})
	reached := 0
	h := g.Dev(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++ }))
	post := func(origin, contentType string) int {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/dev/sign-in", nil)
		r.Host = "127.0.0.1:8080"
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		r.Header.Set("Content-Type", contentType)
		return serve(h, r).Code
	}
	if code := post("http://evil.test", "application/json"); code != http.StatusForbidden {
		t.Errorf("foreign origin: %d", code)
	}
	// A form post needs no preflight: it is not JSON, so it is refused.
	if code := post("http://127.0.0.1:8080", "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", code)
	}
	if code := post("http://127.0.0.1:8080", "application/json"); code != http.StatusOK || reached != 1 {
		t.Errorf("own page: %d, reached %d", code, reached)
	}
}

func TestServiceMetadataFromTheBrowserIsDropped(t *testing.T) {
	var seen http.Header
	g := NewGuard(map[string]bool{unaryPath: false}, nil, roomy, quietLog())
	h := g.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() }))
	r := connectRequest(unaryPath, "", 1)
	r.Header.Set("X-Electric-Table-Forwarded", "1")
	r.Header.Set("Authorization", "Bearer x")
	serve(h, r)
	if seen.Get("X-Electric-Table-Forwarded") != "" || seen.Get("Authorization") != "Bearer x" {
		t.Errorf("headers passed on: %v", seen)
	}
}

func TestListenHosts(t *testing.T) {
	loopback := listenHosts(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080})
	if fmt.Sprint(loopback) != "[127.0.0.1:8080 localhost:8080]" {
		t.Errorf("loopback: %v", loopback)
	}
	if any := listenHosts(&net.TCPAddr{IP: net.IPv4zero, Port: 8080}); any != nil {
		t.Errorf("unspecified: %v", any)
	}
}
