"""Who a created object says it is, and whom it joins: the identity rules of the plan guard.

Kubernetes ties objects together by name and label, not by owner: a JobSet's headless Service
selects pods by `jobset.sigs.k8s.io/jobset-name`; a pod's DNS name is its hostname under its
subdomain (the Service's name); an Indexed Job's pods are named and hostnamed after the Job; a
Job with a manual selector counts whatever pods it selects; exclusive placement keys on the Job
key and the namespaced-job node selector; a gang scheduler gathers the pods that name one
PodGroup. An object this JobSet controls (shim/guard.py checks the owner) but that carries
another JobSet's identity joins that JobSet: its pods enter the other's Service and DNS, its
name takes the name the other's Job needs, its pods join the other's gang. So every identity a
created object or a patch writes must be this JobSet's, as upstream's constructJob writes it:

- a Job is named `<jobset>-<replicated job>-<index>`, index below the replicated Job's
  replicas; its `jobset-name`, `jobset-uid`, `replicatedjob-name`, `job-index` and `job-key`
  labels and annotations (Job and pod template) are the JobSet's, the replicated Job's, the
  index and SHA-1 of `<namespace>/<name>`; `coordinator` is the JobSet's coordinator endpoint
  (or, without one, whatever the replicated Job's template says);
- its pod's subdomain is the JobSet's (`network.subdomain`, else its name) when DNS hostnames
  are on, else the template's; its hostname, and the Job's selector and manualSelector, are the
  template's; `job-name` labels name the Job itself; controller-uid labels are the template's;
  the namespaced-job node selector is `<namespace>_<job>` or the template's;
- a pod joins a gang (schedulingGroup, workloadRef, the scheduler-plugins label, the Volcano
  annotation) only of a Workload or PodGroup this JobSet controls or this plan creates, or as
  its template says; the Job's group-template-name annotation names a template of such a
  Workload (where the shim manages Workloads);
- the Service is named after the JobSet's subdomain and selects exactly its pods; PVCs, Workloads
  and PodGroups carry no other JobSet's name or UID; a Workload's controllerRef is this JobSet;
  a PodGroup names one of this JobSet's Workloads, a CompositePodGroup one of their composite
  templates, and a parent is one of its CompositePodGroups; gang objects are named as the
  decider names a JobSet's (its name, or a name that starts with it: shim/owned.py
  may_be_gang_name);
- a resume patch's labels, annotations and node selector may only keep an identity or set the
  template's.

Counters and positions (restart attempts, global and group indexes, replicas) name nobody and
are the decider's to compute. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from shim.guard_content import REPLICATED_JOB_NAME, Broken, dig, q, replicated_jobs
from shim.indexes import JOBSET_NAME_LABEL as JOBSET_NAME
from shim.owned import controller_ref, may_be_gang_name

Obj = dict[str, Any]

_P = "jobset.sigs.k8s.io/"
JOBSET_UID = _P + "jobset-uid"
JOB_INDEX = _P + "job-index"
JOB_KEY = _P + "job-key"
COORDINATOR = _P + "coordinator"
NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
# The identity keys the decider writes on a Job, its pods and their annotations. The first five
# it always sets over whatever the template says; the coordinator only when the JobSet has one.
ALWAYS_SET = (JOBSET_NAME, JOBSET_UID, REPLICATED_JOB_NAME, JOB_INDEX, JOB_KEY)
JOB_KEYS = (*ALWAYS_SET, COORDINATOR)
# The Job controller's labels on a Job's pods: the API server fills them in from the Job's name
# and UID; a plan may leave them to it, or repeat the name.
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
# How a pod or Job joins a gang (decider/core/gang/targets_kubernetes.py,
# targets_out_of_tree.py and job_facts.py).
GROUP_TEMPLATE = "scheduling.k8s.io/group-template-name"
PLUGINS_POD_GROUP = "scheduling.x-k8s.io/pod-group"  # scheduler-plugins: a pod label
VOLCANO_GROUP = "scheduling.k8s.io/group-name"  # Volcano: a pod annotation
JOBSET_API_GROUP = "jobset.x-k8s.io"


def job_key(namespace: str, name: str) -> str:
    """Upstream's job-key: hex SHA-1 of `<namespace>/<job name>`."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


class Identity:
    """What one JobSet's objects may call themselves, and the gang objects its pods may join.

    `gang` holds the gang objects (kind -> apiVersion in `gang_kinds`) the JobSet controls and
    those the plan creates: a pod may name either, and nothing else, unless its template does.
    """

    def __init__(self, jobset: Obj, gang_kinds: Mapping[str, str], gang: Iterable[Obj]) -> None:
        meta = dig(jobset, "metadata")
        self.name: str = str(meta.get("name", ""))
        self.namespace: str = str(meta.get("namespace", ""))
        self.uid: str = str(meta.get("uid", ""))
        spec = dig(jobset, "spec")
        network = dig(spec, "network")
        # enableDNSHostnames defaults to true (the webhook's and the decider's default).
        self.dns = network.get("enableDNSHostnames") is not False
        sub = network.get("subdomain")
        self.subdomain = sub if isinstance(sub, str) and sub else self.name
        self.rjobs = {r["name"]: r for r in replicated_jobs(jobset)
                      if isinstance(r.get("name"), str)}
        self.coordinator = self._coordinator(spec)
        # Workload name -> its template (pod group) names; its UID when it exists.
        self.workloads: dict[str, set[str]] = {}
        self.workload_uids: dict[str, str] = {}
        self.pod_groups: set[str] = set()
        # JobSetGangOfGangs: a Workload's CompositePodGroup template names, and the
        # CompositePodGroups a PodGroup or CompositePodGroup may name as its parent.
        self.composite_templates: dict[str, set[str]] = {}
        self.composites: set[str] = set()
        # The group-template-name annotation names a template of the Workload of the Job's own
        # controller (the Job controller looks it up there), so it cannot reach another
        # JobSet's; it is checked where this shim manages Workloads, and names nothing
        # elsewhere (scheduler-plugins and Volcano have no Workload).
        self.templates_checked = "Workload" in gang_kinds
        for obj in gang:
            kind = obj.get("kind")
            if kind not in gang_kinds or obj.get("apiVersion") != gang_kinds[kind]:
                continue
            m = dig(obj, "metadata")
            name = m.get("name")
            if not isinstance(name, str):
                continue
            if kind == "Workload":
                leaves, composites = _template_names(obj)
                self.workloads[name] = leaves
                self.composite_templates[name] = composites
                if m.get("uid"):
                    self.workload_uids[name] = str(m["uid"])
            elif kind == "CompositePodGroup":
                self.composites.add(name)
            else:
                self.pod_groups.add(name)

    def _coordinator(self, spec: Obj) -> str | None:
        co = spec.get("coordinator")
        if not isinstance(co, dict) or not isinstance(co.get("replicatedJob"), str):
            return None
        job_index, pod_index = co.get("jobIndex", 0), co.get("podIndex", 0)
        if not (_is_count(job_index) and _is_count(pod_index)):
            return None
        return (f"{self.name}-{co['replicatedJob']}-{job_index}-{pod_index}."
                f"{self.subdomain}")

    # ---- Jobs ---------------------------------------------------------------------------------

    def job(self, obj: Obj) -> None:
        """A created Job (its replicated Job exists: guard_content.pod_template checked)."""
        meta = obj["metadata"]
        name = meta["name"]
        labels = _map(meta.get("labels"), "the Job's labels")
        rjob_name = labels.get(REPLICATED_JOB_NAME)
        rjob = self.rjobs.get(rjob_name) if isinstance(rjob_name, str) else None
        if rjob is None:
            raise Broken("identity", f"the Job's {REPLICATED_JOB_NAME} {q(rjob_name)} is not a "
                                     "replicated Job of the JobSet")
        index = self._index(name, rjob_name, rjob)
        own = {JOBSET_NAME: self.name, JOBSET_UID: self.uid, REPLICATED_JOB_NAME: rjob_name,
               JOB_INDEX: str(index), JOB_KEY: job_key(self.namespace, name)}
        if self.coordinator is not None:
            own[COORDINATOR] = self.coordinator
        job_tmpl = dig(rjob, "template", "metadata")
        pod_tmpl = dig(rjob, "template", "spec", "template")
        pod = dig(obj, "spec", "template")
        pod_meta = dig(pod, "metadata")
        pod_labels = _map(pod_meta.get("labels"), "the pod's labels")
        pod_annotations = _map(pod_meta.get("annotations"), "the pod's annotations")
        job_annotations = _map(meta.get("annotations"), "the Job's annotations")
        for where, have, template in (
            ("the Job's labels", labels, job_tmpl.get("labels")),
            ("the Job's annotations", job_annotations, job_tmpl.get("annotations")),
            ("the pod's labels", pod_labels, dig(pod_tmpl, "metadata").get("labels")),
            ("the pod's annotations", pod_annotations,
             dig(pod_tmpl, "metadata").get("annotations")),
        ):
            self._keys(where, name, have, own, _map(template, where + " template"))
        tmpl_labels = _map(dig(pod_tmpl, "metadata").get("labels"), "the template's labels")
        for key in JOB_NAME_LABELS:
            if key in pod_labels and pod_labels[key] not in (name, tmpl_labels.get(key)):
                raise Broken("identity", f"the pod's label {key}={q(pod_labels[key])} names "
                                         f"another Job than {q(name)}")
        for key in CONTROLLER_UID_LABELS:
            if pod_labels.get(key) != tmpl_labels.get(key):
                raise Broken("identity", f"the pod's label {key}={q(pod_labels.get(key))} "
                                         "claims a Job's pods; the API server sets it")
        want_spec = dig(rjob, "template", "spec")
        have_spec = dig(obj, "spec")
        for field in ("selector", "manualSelector"):
            if have_spec.get(field) != want_spec.get(field):
                raise Broken("identity", f"the Job's {field} is {q(have_spec.get(field))}; "
                                         f"replicated Job {q(rjob_name)} says "
                                         f"{q(want_spec.get(field))}")
        self._pod_spec(name, dig(pod, "spec"), dig(pod_tmpl, "spec"))
        self._gang_refs(pod_labels, pod_annotations, dig(pod, "spec"), pod_tmpl, job_annotations,
                        _map(job_tmpl.get("annotations"), "the Job template's annotations"))

    def _index(self, name: str, rjob_name: str, rjob: Obj) -> int:
        prefix = f"{self.name}-{rjob_name}-"
        digits = name[len(prefix):] if name.startswith(prefix) else ""
        replicas = rjob.get("replicas", 1)
        if not (digits.isdigit() and digits.isascii() and str(int(digits)) == digits
                and _is_count(replicas) and int(digits) < replicas):
            raise Broken("identity", f"Job {q(name)} is not named <jobset>-<replicated job>-"
                                     f"<index> for JobSet {q(self.name)}, replicated Job "
                                     f"{q(rjob_name)} and an index below its replicas "
                                     f"({q(replicas)})")
        return int(digits)

    def _keys(self, where: str, job: str, have: Mapping[str, Any], own: Mapping[str, str],
              template: Mapping[str, Any]) -> None:
        for key in JOB_KEYS:
            if key not in have:
                continue
            allowed = own.get(key) if key in own or key in ALWAYS_SET else template.get(key)
            if have[key] != allowed:
                whose = (f"Job {q(job)} of JobSet {q(self.name)} has {q(allowed)}"
                         if allowed is not None else f"JobSet {q(self.name)} sets none")
                raise Broken("identity", f"{where} say {key}={q(have[key])}; {whose}")

    def _pod_spec(self, job: str, have: Obj, want: Obj) -> None:
        if have.get("hostname") != want.get("hostname"):
            raise Broken("identity", f"the pod's hostname is {q(have.get('hostname'))}; its "
                                     f"template says {q(want.get('hostname'))}")
        subdomain = self.subdomain if self.dns else want.get("subdomain")
        if have.get("subdomain") != subdomain:
            raise Broken("identity", f"the pod's subdomain is {q(have.get('subdomain'))}; "
                                     f"JobSet {q(self.name)}'s is {q(subdomain)}")
        self._node_selector(job, _map(have.get("nodeSelector"), "the pod's nodeSelector"),
                            _map(want.get("nodeSelector"), "the template's nodeSelector"))

    def _node_selector(self, job: str, have: Mapping[str, Any], template: Mapping[str, Any],
                       current: Mapping[str, Any] | None = None) -> None:
        if NAMESPACED_JOB not in have:
            return
        allowed = {f"{self.namespace}_{job}", template.get(NAMESPACED_JOB),
                   (current or {}).get(NAMESPACED_JOB)}
        if have[NAMESPACED_JOB] not in allowed:
            raise Broken("identity", f"the pod's nodeSelector {NAMESPACED_JOB}="
                                     f"{q(have[NAMESPACED_JOB])} is not Job {q(job)}'s")

    def _gang_refs(self, pod_labels: Mapping[str, Any], pod_annotations: Mapping[str, Any],
                   pod_spec: Obj, pod_tmpl: Obj, job_annotations: Mapping[str, Any],
                   job_tmpl_annotations: Mapping[str, Any]) -> None:
        tmpl_spec = dig(pod_tmpl, "spec")
        tmpl_meta = dig(pod_tmpl, "metadata")
        group = pod_spec.get("schedulingGroup")
        if group != tmpl_spec.get("schedulingGroup") and not (
                isinstance(group, dict) and set(group) == {"podGroupName"}
                and group["podGroupName"] in self.pod_groups):
            raise Broken("identity", f"the pod's schedulingGroup {_short(group)} is not a "
                                     f"PodGroup of JobSet {q(self.name)}")
        ref = pod_spec.get("workloadRef")
        if ref != tmpl_spec.get("workloadRef") and not (
                isinstance(ref, dict) and set(ref) == {"name", "podGroup"}
                and ref["podGroup"] in self.workloads.get(ref["name"], ())):
            raise Broken("identity", f"the pod's workloadRef {_short(ref)} is not a pod group "
                                     f"of a Workload of JobSet {q(self.name)}")
        for where, have, template, key, allowed in (
            ("the pod's label", pod_labels, tmpl_meta.get("labels"), PLUGINS_POD_GROUP,
             self.pod_groups),
            ("the pod's annotation", pod_annotations, tmpl_meta.get("annotations"),
             VOLCANO_GROUP, self.pod_groups),
            ("the Job's annotation", job_annotations, job_tmpl_annotations, GROUP_TEMPLATE,
             {t for templates in self.workloads.values() for t in templates}),
        ):
            value = have.get(key)
            if value is None or value == _map(template, where).get(key) or value in allowed:
                continue
            if key == GROUP_TEMPLATE and not self.templates_checked:
                continue
            raise Broken("identity", f"{where} {key}={q(value)} names a gang object that is "
                                     f"not JobSet {q(self.name)}'s")

    def resume(self, target: Obj, patch_json: str) -> None:
        """A resume patch (its shape checked) on a Job the JobSet controls: the pod template's
        identities stay, or become what the replicated Job's template says (upstream merges the
        template's labels, annotations and node selector in on resume)."""
        tmpl = dig(json.loads(patch_json or "{}"), "spec", "template")
        if not tmpl:
            return
        job_meta = dig(target, "metadata")
        rjob_name = _map(job_meta.get("labels"), "the Job's labels").get(REPLICATED_JOB_NAME)
        rjob = self.rjobs.get(rjob_name) if isinstance(rjob_name, str) else None
        want = dig(rjob or {}, "template", "spec", "template")
        current = dig(target, "spec", "template")
        for part, where in (("labels", "labels"), ("annotations", "annotations")):
            have = _map(dig(tmpl, "metadata").get(part), f"the patch's {where}")
            now = _map(dig(current, "metadata").get(part), f"the Job's pod {where}")
            template = _map(dig(want, "metadata").get(part), f"the template's {where}")
            for key in (*JOB_KEYS, *JOB_NAME_LABELS, *CONTROLLER_UID_LABELS, PLUGINS_POD_GROUP,
                        VOLCANO_GROUP):
                if key in have and have[key] not in (now.get(key), template.get(key)):
                    raise Broken("identity", f"the patch sets the pod's {where[:-1]} "
                                             f"{key}={q(have[key])}; Job "
                                             f"{q(job_meta.get('name'))} has {q(now.get(key))}")
        self._node_selector(str(job_meta.get("name", "")),
                            _map(dig(tmpl, "spec").get("nodeSelector"), "the patch's nodeSelector"),
                            _map(dig(want, "spec").get("nodeSelector"), "nodeSelector"),
                            _map(dig(current, "spec").get("nodeSelector"), "nodeSelector"))

    # ---- the other kinds ------------------------------------------------------------------------

    def service(self, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if name != self.subdomain:
            raise Broken("identity", f"the Service is named {q(name)}; JobSet {q(self.name)}'s "
                                     f"headless Service is its subdomain {q(self.subdomain)}")
        selector = dig(obj, "spec").get("selector")
        if selector != {JOBSET_NAME: self.name}:
            raise Broken("identity", f"the Service selects {_short(selector)}; it selects "
                                     f"JobSet {q(self.name)}'s pods: {{{JOBSET_NAME}: "
                                     f"{self.name}}}")
        self._labels(obj, "the Service's labels")

    def service_update(self, target: Obj) -> None:
        """UpdateService acts on the JobSet's headless Service only (its subdomain), not on any
        other Service the JobSet might control."""
        name = dig(target, "metadata").get("name")
        if name != self.subdomain:
            raise Broken("identity", f"the Service {q(name)} is not JobSet {q(self.name)}'s "
                                     f"headless Service {q(self.subdomain)}")

    def pvc(self, obj: Obj) -> None:
        self._labels(obj, "the PVC's labels")

    def workload(self, obj: Obj) -> None:
        self._gang_name(obj, "Workload")
        self._labels(obj, "the Workload's labels")
        ref = dig(obj, "spec").get("controllerRef")
        want = {"apiGroup": JOBSET_API_GROUP, "kind": "JobSet", "name": self.name}
        if ref is not None and ref != want:
            raise Broken("identity", f"the Workload's controllerRef {_short(ref)} is not "
                                     f"JobSet {q(self.name)}")

    def pod_group(self, obj: Obj) -> None:
        self._gang_name(obj, "PodGroup")
        self._labels(obj, "the PodGroup's labels")
        spec = dig(obj, "spec")
        # v1beta1 spec.workloadRef, v1alpha2 spec.podGroupTemplateRef.workload.
        for ref, template_key in ((spec.get("workloadRef"), "templateName"),
                                  (dig(spec, "podGroupTemplateRef").get("workload"),
                                   "podGroupTemplateName")):
            if ref is None:
                continue
            ref = _map(ref, "the PodGroup's Workload reference")
            workload, template = ref.get("workloadName"), ref.get(template_key)
            if workload not in self.workloads or (
                    self.workloads[workload] and template not in self.workloads[workload]):
                raise Broken("identity", f"the PodGroup joins Workload {q(workload)} template "
                                         f"{q(template)}, not one of JobSet {q(self.name)}'s")
        self._parent(obj, "PodGroup")
        controller = controller_ref(obj)
        for owner in obj["metadata"].get("ownerReferences") or []:
            if owner is controller or owner.get("kind") != "Workload":
                continue
            name = owner.get("name")
            known = self.workload_uids.get(name) if isinstance(name, str) else None
            if name not in self.workloads or (known is not None and owner.get("uid") != known):
                raise Broken("identity", f"the PodGroup's owner Workload {q(name)} (uid "
                                         f"{q(owner.get('uid'))}) is not JobSet "
                                         f"{q(self.name)}'s")

    def composite_pod_group(self, obj: Obj) -> None:
        """A CompositePodGroup (v1alpha3) is named as the JobSet's gang objects, is a composite
        template of one of its Workloads, and hangs under one of its CompositePodGroups."""
        self._gang_name(obj, "CompositePodGroup")
        self._labels(obj, "the CompositePodGroup's labels")
        ref = _map(dig(obj, "spec").get("workloadRef"), "the CompositePodGroup's Workload "
                                                        "reference")
        workload, template = ref.get("workloadName"), ref.get("templateName")
        if template not in self.composite_templates.get(str(workload), ()):
            raise Broken("identity", f"the CompositePodGroup joins Workload {q(workload)} "
                                     f"template {q(template)}, not a CompositePodGroup template "
                                     f"of JobSet {q(self.name)}'s")
        self._parent(obj, "CompositePodGroup")

    def _parent(self, obj: Obj, kind: str) -> None:
        parent = dig(obj, "spec").get("parentCompositePodGroupName")
        if parent is not None and parent not in self.composites:
            raise Broken("identity", f"the {kind}'s parent {q(parent)} is not a "
                                     f"CompositePodGroup of JobSet {q(self.name)}")

    def _gang_name(self, obj: Obj, kind: str) -> None:
        name = obj["metadata"]["name"]
        if not may_be_gang_name(self.name, name):
            raise Broken("identity", f"{kind} {q(name)} is not named as JobSet {q(self.name)}'s "
                                     "gang objects are (its name, or starting with it)")

    def _labels(self, obj: Obj, where: str) -> None:
        labels = _map(obj["metadata"].get("labels"), where)
        for key, own in ((JOBSET_NAME, self.name), (JOBSET_UID, self.uid)):
            if key in labels and labels[key] != own:
                raise Broken("identity", f"{where} say {key}={q(labels[key])}; JobSet "
                                         f"{q(self.name)}'s is {q(own)}")


def _template_names(workload: Obj) -> tuple[set[str], set[str]]:
    """A Workload's pod group template names (top level, or the leaves of its
    compositePodGroupTemplates tree), and its CompositePodGroup template names."""
    spec = dig(workload, "spec")
    leaves: set[str] = set()
    composites: set[str] = set()

    def names(items: Any, into: set[str]) -> list[Obj]:
        found = [i for i in (items if isinstance(items, list) else ()) if isinstance(i, dict)]
        into.update(i["name"] for i in found if isinstance(i.get("name"), str))
        return found

    for key in ("podGroupTemplates", "podGroups"):  # 1.36 and later; 1.35 (v1alpha1)
        names(spec.get(key), leaves)
    todo = names(spec.get("compositePodGroupTemplates"), composites)
    depth = 0
    while todo and depth < 8:  # the API allows 4 levels; a deeper tree names nothing more
        nxt: list[Obj] = []
        for node in todo:
            names(node.get("podGroupTemplates"), leaves)
            nxt += names(node.get("compositePodGroupTemplates"), composites)
        todo, depth = nxt, depth + 1
    return leaves, composites


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Broken("identity", f"{where} is not a map")
    return value


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _short(value: Any) -> str:
    return q(json.dumps(value, sort_keys=True, separators=(",", ":")))
