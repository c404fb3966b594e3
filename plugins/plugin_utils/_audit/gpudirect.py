# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Whether GPUDirect RDMA can work on a node, read from its facts in one place: GDR-001 (rules/gdr.py) and the model
of NCCL's collectives (_planning/node_shape.py) import the verdict. It is not a rule module, so importing it
registers no rule (the catalog's order stays the families')."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def gdr_possible(facts):
    """Whether GPUDirect RDMA can carry NCCL's network traffic on this node: True (nvidia_peermem or nv_peer_mem
    loaded, or DMA-BUF possible), False (neither, and the facts say why DMA-BUF cannot: NCCL stages through host
    memory), None (the facts do not say which modules are loaded, or whether DMA-BUF works). GDR-001 judges the same
    facts; the model of NCCL's collectives takes this verdict."""
    modules = facts.get("kernel_modules") if isinstance(facts, dict) else None
    if not isinstance(modules, dict):
        return None
    if modules.get("nvidia_peermem") is True or modules.get("nv_peer_mem") is True:
        return True
    return dmabuf_state(facts)[0]


def _mapping(value):
    return value if isinstance(value, dict) else {}


def dmabuf_state(facts):
    """(whether DMA-BUF can carry GPUDirect RDMA here: True, False, or None where the facts cannot tell, why not):
    kernel 5.12+, the open GPU kernel module, and NCCL_DMABUF_ENABLE not 0 in /etc/nccl.conf. Values of the wrong
    type count as not known."""
    gpudirect = _mapping(facts.get("gpudirect"))
    dmabuf = _mapping(gpudirect.get("dmabuf"))
    driver = _mapping(gpudirect.get("nvidia_driver"))
    conf = _mapping(_mapping(facts.get("nccl")).get("values"))
    if str(conf.get("NCCL_DMABUF_ENABLE", "")).strip() == "0":
        return False, "is turned off (NCCL_DMABUF_ENABLE=0 in /etc/nccl.conf)"
    if dmabuf.get("kernel") is False:
        return False, "needs kernel 5.12 or later (this one is %s)" % gpudirect.get("kernel_release")
    if dmabuf.get("open_module") is False:
        return False, "needs the open GPU kernel module (driver %s is the proprietary one)" % driver.get("version")
    if dmabuf.get("possible") is True:
        return True, None
    return (None if dmabuf.get("possible") is None else False,
            "could not be confirmed (kernel release or GPU driver not in these facts)")
