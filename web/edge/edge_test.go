package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// realDescriptors is the descriptor set make protos writes (with imports).
const realDescriptors = "../../gen/electric/descriptor_set.pb"

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func loadReal(t *testing.T) *Schema {
	t.Helper()
	schema, err := LoadSchema(realDescriptors)
	if err != nil {
		t.Fatalf("LoadSchema: %v", err)
	}
	return schema
}

func TestSchemaSelectsThePublicMethodsOfTheRealDescriptors(t *testing.T) {
	schema := loadReal(t)
	if got := len(schema.Public); got != 31 {
		t.Fatalf("public methods: got %d, want 31: %v", got, schema.PublicPaths())
	}
	all := 0
	for _, service := range schema.Services {
		if !strings.HasPrefix(string(service.FullName()), "electric.") {
			t.Errorf("not a platform service: %s", service.FullName())
		}
		all += service.Methods().Len()
	}
	if all != 42 {
		t.Errorf("platform methods: got %d, want 42", all)
	}
	for _, internal := range []string{
		"/electric.wallet.v1.WalletService/Deposit",
		"/electric.wallet.v1.WalletService/CreateTransfer",
		"/electric.registration.v1.RegistrationService/CancelTable",
		"/electric.table.v1.CasinoTableService/VoidRound",
	} {
		if _, ok := schema.Public[internal]; ok {
			t.Errorf("%s is internal but selected", internal)
		}
	}
	watch, ok := schema.Public["/electric.table.v1.TableService/WatchTable"]
	if !ok || !watch.IsStreamingServer() || watch.IsStreamingClient() {
		t.Errorf("WatchTable: public %v, want a public server stream", ok)
	}
	act, ok := schema.Public["/electric.table.v1.TableService/Act"]
	if !ok || act.IsStreamingServer() {
		t.Errorf("Act: public %v, want a public unary method", ok)
	}
	paths := schema.PublicPaths()
	if !slices.IsSorted(paths) || len(paths) != 31 {
		t.Errorf("PublicPaths not sorted or incomplete: %v", paths)
	}
	for _, path := range paths {
		if MethodPath(schema.Public[path]) != path {
			t.Errorf("MethodPath(%s) = %s", path, MethodPath(schema.Public[path]))
		}
	}
}

// methodWithExposure is a method whose options carry the exposure option as an unknown
// field (how they arrive from a descriptor set parsed without the extension known).
func methodWithExposure(name string, exposure int64, set bool) *descriptorpb.MethodDescriptorProto {
	method := &descriptorpb.MethodDescriptorProto{
		Name:       proto.String(name),
		InputType:  proto.String(".electric.test.v1.Req"),
		OutputType: proto.String(".electric.test.v1.Req"),
	}
	if set {
		options := &descriptorpb.MethodOptions{Deprecated: proto.Bool(false)}
		raw := protowire.AppendTag(nil, 50601, protowire.VarintType)
		raw = protowire.AppendVarint(raw, uint64(exposure))
		options.ProtoReflect().SetUnknown(raw)
		method.Options = options
	}
	return method
}

func TestSchemaReadsTheOptionAndTreatsUnsetAsInternal(t *testing.T) {
	raw, err := os.ReadFile(realDescriptors)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	set.File = append(set.File, &descriptorpb.FileDescriptorProto{
		Name:        proto.String("electric/test/v1/test.proto"),
		Package:     proto.String("electric.test.v1"),
		Syntax:      proto.String("proto3"),
		Dependency:  []string{"electric/common/v1/access.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Req")}},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("TestService"),
			Method: []*descriptorpb.MethodDescriptorProto{
				methodWithExposure("Public", 1, true),
				methodWithExposure("Internal", 2, true),
				methodWithExposure("Unspecified", 0, true),
				methodWithExposure("Unset", 0, false),
				methodWithExposure("Unknown", 7, true),
			},
		}},
	})
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := NewSchema(files)
	if err != nil {
		t.Fatal(err)
	}
	for method, want := range map[string]bool{
		"Public": true, "Internal": false, "Unspecified": false, "Unset": false, "Unknown": false,
	} {
		_, got := schema.Public["/electric.test.v1.TestService/"+method]
		if got != want {
			t.Errorf("%s: public %v, want %v", method, got, want)
		}
	}
	if len(schema.Public) != 32 {
		t.Errorf("public: got %d, want 31 + 1", len(schema.Public))
	}
}

func TestLoadSchemaFailsClearly(t *testing.T) {
	if _, err := LoadSchema("no/such/file.pb"); err == nil {
		t.Error("a missing descriptor set was accepted")
	}
	bad := t.TempDir() + "/bad.pb"
	if err := os.WriteFile(bad, []byte{0xff, 0xff, 0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSchema(bad); err == nil {
		t.Error("garbage was accepted as a descriptor set")
	}
}

func TestParseConfig(t *testing.T) {
	cfg, err := parseConfig([]string{
		"-backend", "electric.table.v1=127.0.0.1:50052",
		"-backend", "electric.wallet.v1=127.0.0.1:50053",
		"-allow-origin", "https://a.test", "-allow-origin", "https://b.test",
		"-rate", "2.5", "-burst", "7", "-max-streams", "3", "-max-request-bytes", "1024",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backends["electric.table.v1"] != "127.0.0.1:50052" || len(cfg.Backends) != 2 {
		t.Errorf("backends: %v", cfg.Backends)
	}
	if !slices.Equal(cfg.Origins, []string{"https://a.test", "https://b.test"}) {
		t.Errorf("origins: %v", cfg.Origins)
	}
	want := Limits{MaxRequestBytes: 1024, Rate: 2.5, Burst: 7, AddressRate: 10, AddressBurst: 28, MaxStreams: 3}
	if cfg.Limits != want {
		t.Errorf("limits: %+v, want %+v", cfg.Limits, want)
	}
	defaults, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if (defaults.Limits != Limits{MaxRequestBytes: 64 << 10, Rate: 50, Burst: 100, AddressRate: 200, AddressBurst: 400, MaxStreams: 16}) {
		t.Errorf("default limits: %+v", defaults.Limits)
	}
	for _, bad := range []string{"electric.table.v1", "=127.0.0.1:1", "electric.table.v1="} {
		if _, err := parseConfig([]string{"-backend", bad}); err == nil {
			t.Errorf("-backend %q accepted", bad)
		}
	}
}

func TestNewHandlerWantsABackendForEveryPublicService(t *testing.T) {
	schema := loadReal(t)
	cfg := Config{Backends: map[string]string{"electric.table.v1": "127.0.0.1:1"}}
	if _, err := NewHandler(cfg, schema, quietLog()); err == nil {
		t.Fatal("a handler without the wallet's backend was built")
	}
}

func TestHandlerServesHealthAndRefusesInternalMethods(t *testing.T) {
	schema := loadReal(t)
	cfg := Config{Backends: map[string]string{}, Limits: Limits{MaxRequestBytes: 1 << 16}}
	for _, pkg := range []string{"registration", "table", "wallet", "payout"} {
		// Unreachable backends: the refusals below never get that far.
		cfg.Backends["electric."+pkg+".v1"] = "127.0.0.1:1"
	}
	handler, err := NewHandler(cfg, schema, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	health := httptest.NewRecorder()
	handler.ServeHTTP(health, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if health.Code != http.StatusOK || health.Body.String() != "ok\n" {
		t.Errorf("/healthz: %d %q", health.Code, health.Body.String())
	}
	deposit := connectRequest("/electric.wallet.v1.WalletService/Deposit", "", 0)
	got := httptest.NewRecorder()
	handler.ServeHTTP(got, deposit)
	if code := connectCode(t, got); code != "unimplemented" {
		t.Errorf("Deposit through the edge: %q, want unimplemented", code)
	}
}
