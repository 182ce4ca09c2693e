"""A list read in pages, as client-go's reflector reads it (tools/pager).

One unpaged list of a big collection is one response the API server builds whole in memory and
the client reads whole within one request timeout: at tens of thousands of Jobs neither holds,
and a list that always times out is a cache that never syncs. Pages of `limit` objects, chained
by the server's `continue` token, keep each response small. A token outlives the snapshot it
was taken at only until etcd compacts it (410 Expired, typically minutes): the list is then read
again whole, unpaged, as client-go's pager does, rather than paged again from the start, which a
slow reader could lose the same way forever.
"""

from __future__ import annotations

import logging

from kubernetes.client.exceptions import ApiException

from shim.kube import Kube, Obj
from shim.kube_resource import Resource

log = logging.getLogger(__name__)

# client-go's reflector asks for 500 objects a page.
PAGE_SIZE = 500


def list_all(kube: Kube, res: Resource, namespace: str | None, label_selector: str = "",
             page_size: int = PAGE_SIZE) -> Obj:
    """Every object of the collection, in one list object whose resourceVersion is the
    snapshot's (the last page's: every page of one snapshot carries the same)."""
    items: list[Obj] = []
    token = ""
    while True:
        try:
            out = kube.list(res, namespace, label_selector,
                            limit=page_size if page_size > 0 else 0, continue_token=token)
        except ApiException as exc:
            if exc.status != 410 or not token:
                raise
            log.info("%s: the list's continue token expired after %d objects; listing again "
                     "in one request", res.plural, len(items))
            return kube.list(res, namespace, label_selector)
        items.extend(out.get("items") or [])
        meta = out.get("metadata") or {}
        token = str(meta.get("continue") or "")
        if not token:
            out["items"] = items
            return out
