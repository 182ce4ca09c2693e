"""The contract's enums as the words people and JSON use for them ("CreateJob", "JobFailed"):
the CLI prints them, the server reads simulation events by them, the shim logs them."""

from __future__ import annotations

from decider_api.v1 import decider_pb2 as pb

ACTION_NAMES = {
    pb.ACTION_TYPE_CREATE_JOB: "CreateJob",
    pb.ACTION_TYPE_DELETE_JOB: "DeleteJob",
    pb.ACTION_TYPE_SUSPEND_JOB: "SuspendJob",
    pb.ACTION_TYPE_RESUME_JOB: "ResumeJob",
    pb.ACTION_TYPE_PATCH_JOB: "PatchJob",
    pb.ACTION_TYPE_CREATE_SERVICE: "CreateService",
    pb.ACTION_TYPE_CREATE_PVC: "CreatePVC",
    pb.ACTION_TYPE_CREATE_WORKLOAD: "CreateWorkload",
    pb.ACTION_TYPE_CREATE_POD_GROUP: "CreatePodGroup",
    pb.ACTION_TYPE_DELETE_WORKLOAD: "DeleteWorkload",
    pb.ACTION_TYPE_DELETE_POD_GROUP: "DeletePodGroup",
    pb.ACTION_TYPE_UPDATE_STATUS: "UpdateStatus",
    pb.ACTION_TYPE_DELETE_JOB_SET: "DeleteJobSet",
    pb.ACTION_TYPE_EVENT: "Event",
    pb.ACTION_TYPE_PATCH_WORKLOAD: "PatchWorkload",
    pb.ACTION_TYPE_PATCH_POD_GROUP: "PatchPodGroup",
    pb.ACTION_TYPE_UPDATE_SERVICE: "UpdateService",
    pb.ACTION_TYPE_CREATE_COMPOSITE_POD_GROUP: "CreateCompositePodGroup",
    pb.ACTION_TYPE_DELETE_COMPOSITE_POD_GROUP: "DeleteCompositePodGroup",
    pb.ACTION_TYPE_PATCH_COMPOSITE_POD_GROUP: "PatchCompositePodGroup",
}
ACTION_TYPES = {name: value for value, name in ACTION_NAMES.items()}
SIMULATION_EVENT_NAMES = {
    pb.SIMULATION_EVENT_TYPE_JOB_FAILED: "JobFailed",
    pb.SIMULATION_EVENT_TYPE_JOB_SUCCEEDED: "JobSucceeded",
    pb.SIMULATION_EVENT_TYPE_JOB_READY: "JobReady",
    pb.SIMULATION_EVENT_TYPE_JOB_SUSPENDED: "JobSuspended",
    pb.SIMULATION_EVENT_TYPE_JOB_RESUMED: "JobResumed",
    pb.SIMULATION_EVENT_TYPE_JOBSET_SUSPENDED: "JobSetSuspended",
    pb.SIMULATION_EVENT_TYPE_JOBSET_RESUMED: "JobSetResumed",
}
SIMULATION_EVENT_TYPES = {name: value for value, name in SIMULATION_EVENT_NAMES.items()}
