module electric-edge

go 1.26.0

require (
	connectrpc.com/connect v1.19.1
	connectrpc.com/vanguard v0.4.0
	github.com/rs/cors v1.11.1
	golang.org/x/time v0.16.0
	google.golang.org/protobuf v1.36.11
)

require (
	google.golang.org/genproto/googleapis/api v0.0.0-20260223185530-2f722ef697dc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260223185530-2f722ef697dc // indirect
)
