"""A Kueue AdmissionCheck answered by the decider (`decider-kueue-check`, docs/kueue.md).

For each Workload of a JobSet that waits on one of its checks, the controller asks the decider
to Validate the JobSet under the cluster's gates and compares the decider's PodSets with the
Workload's pod sets; the check becomes Ready, Rejected (with the decider's message) or Retry
(after the decider's pushback when it sheds load). Like the rest of the shim, it imports the
decider's contract (decider_api, decider_client), never the decider.
"""
