"""The thin operator: watch JobSets, ask the decider, apply its plan.

It imports the contract only (the generated `decider.v1` stubs and `decider_client`), never the
decider's implementation.
"""
