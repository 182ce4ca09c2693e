module github.com/jobset-decider/jobset-decider/clients/go

// go.mod asks for what Debian bookworm ships, the versions this module is built and tested
// against (docs/clients.md, "Go: versions"): Go 1.19, gRPC-Go 1.33.3, protobuf-go 1.28.1.
go 1.19

require (
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
	sigs.k8s.io/yaml v1.3.0
)

require (
	github.com/golang/protobuf v1.5.2 // indirect
	golang.org/x/net v0.7.0 // indirect
	golang.org/x/sys v0.3.0 // indirect
	golang.org/x/text v0.7.0 // indirect
	google.golang.org/genproto v0.0.0-20200526211855-cb27e3aa2013 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
