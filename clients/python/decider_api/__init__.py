"""What the decider's clients and its server share, and nothing else: the contract's generated
messages and stubs (decider_api.v1), the summarizer that turns Kubernetes objects into the
contract's typed observations, the contract's names for its enums, TLS material that follows its
files, PEM reading, the listening helper, and the version. It needs grpcio and protobuf only, so
the client installs without the server; the server imports it and never the client."""
