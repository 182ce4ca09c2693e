"""The contract's Python messages and stubs under the name they were first published as.

The generated code lives in decider_api.v1 (clients/python/decider_api), which the Python client
installs without the server; these modules re-export the very same classes, so code written
against `decider.v1` keeps working beside code written against `decider_api.v1`.
"""
