"""The thin operator: watch JobSets, ask the decider, apply its plan.

It imports the contract only (the generated `decider_api.v1` stubs, `decider_api` and
`decider_client`), never the decider's implementation.
"""
