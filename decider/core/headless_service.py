"""The headless Service behind pod DNS hostnames (upstream createHeadlessSvcIfNecessary).

With network.enableDNSHostnames, the JobSet needs a headless Service named after its subdomain,
selecting its pods. Since #1300 (merged; jobset_controller.go @4f0cbded) the Service declares
the ports the JobSet's containers declare, so that service meshes that route only to declared
ports (Istio) reach the pods; and a Service the JobSet controls is kept in sync with them (one
created before #1300 has none). A Service of that name that someone else controls is used as it
is, never changed.
"""

from __future__ import annotations

from typing import Any

from decider.core import constants as c
from decider.core.child_jobs import owner_reference
from decider.core.jobset import JobSet
from decider.core.model import Action, ObservedObject
from decider.core.state import PassState


def ports(js: JobSet) -> list[dict[str, Any]]:
    """headlessSvcPorts: every container port of every replicated Job's pod template, once per
    port and protocol, in the order met. A port of 0 is skipped, an empty protocol is TCP, and
    each is named <protocol in lower case>-<port> ("tcp-8080": unique, and within the 15
    characters a port name may have). No container port: no ports (the Service as before)."""
    seen: set[tuple[int, str]] = set()
    out: list[dict[str, Any]] = []
    for rjob in js.replicated_jobs:
        pod = ((rjob.template.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or ():
            for port in (container or {}).get("ports") or ():
                number = (port or {}).get("containerPort") or 0
                if not isinstance(number, int) or isinstance(number, bool) or number == 0:
                    continue
                protocol = port.get("protocol") or "TCP"
                if not isinstance(protocol, str) or (number, protocol) in seen:
                    continue
                seen.add((number, protocol))
                out.append({"name": f"{protocol.lower()}-{number}", "protocol": protocol,
                            "port": number, "targetPort": number})
    return out


def manifest(js: JobSet) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterIP": "None", "selector": {c.JOBSET_NAME: js.name},
                            "publishNotReadyAddresses": js.publish_not_ready}
    declared = ports(js)
    if declared:
        spec["ports"] = declared
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": js.subdomain, "namespace": js.namespace,
                     "ownerReferences": [owner_reference(js)]},
        "spec": spec,
    }


def reconcile(st: PassState) -> None:
    js = st.js
    if not js.dns_hostnames:
        return
    existing = next((o for o in st.observed.objects
                     if o.kind == "Service" and o.name == js.subdomain), None)
    if existing is None:
        st.act(Action(type="CreateService", name=js.subdomain, api_version="v1", kind="Service",
                      object=manifest(js),
                      reason="pod DNS hostnames are enabled and the headless Service is missing"))
        st.explain(f"create headless Service {js.subdomain} for pod DNS hostnames")
        return
    _sync_ports(st, existing)


def _declared(service: ObservedObject) -> list[Any]:
    """The Service's spec.ports as sent: a list of objects, or absent (the contract's edge
    checked the types, clients/python/decider_api/observed_shape.py)."""
    return ((service.obj or {}).get("spec") or {}).get("ports") or []


def _sync_ports(st: PassState, service: ObservedObject) -> None:
    """An existing Service the JobSet controls gets the ports its containers declare."""
    js = st.js
    if not js.uid or service.controller_uid != js.uid or service.obj is None:
        return
    have = _declared(service)
    want = ports(js)
    if _same(have, want):
        return
    st.act(Action(type="UpdateService", name=service.name, api_version="v1", kind="Service",
                  uid=service.uid, patch={"spec": {"ports": want or None}},
                  reason="the headless Service's ports differ from the ports its containers "
                         "declare"))
    names = ", ".join(p["name"] for p in want) or "none"
    st.explain(f"update headless Service {service.name}: its ports become those the "
               f"containers declare ({names})")


def _normal(port: dict[str, Any]) -> dict[str, Any]:
    """A ServicePort as Go compares it: unset fields and their zero values alike."""
    return {k: v for k, v in port.items() if v not in (None, "", 0)}


def _same(have: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    """apiequality.Semantic.DeepEqual of the two port lists (nil and empty alike)."""
    return [_normal(p) for p in have] == [_normal(p) for p in want]
