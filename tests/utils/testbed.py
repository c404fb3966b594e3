"""Test beds that do not collide: each test run (one pytest process, and what it starts) leases one of SLOTS slots, and
every namespace, interface and address it creates carries the slot. Two runs on one machine (a clean-clone CI run
beside a working tree's) then never share a name or an address.

A slot is an exclusive flock on /run/gpuops-fabric-tests/slot-<n>.lock, held as long as the process lives (the kernel
drops it when the process ends, killed or not: no stale leases). The process's children inherit the slot through
GPUOPS_TESTBED_SLOT (molecule's create and destroy playbooks run tests/utils/nshosts.py as children of the pytest that
started molecule). Set GPUOPS_TESTBED_SLOT yourself to pin one (0-7).

Names: a bed's prefix gets the slot's letter ("gftu" -> "gftuc" in slot 2). Addresses: 198.18.0.0/15 holds 8 x 64
/24s; a bed's octet (0-63) becomes 198.<18 + slot // 4>.<(slot % 4) * 64 + octet>.
"""

import fcntl
import os

SLOTS = 8
OCTETS = 64
LEASES = "/run/gpuops-fabric-tests"
ENV = "GPUOPS_TESTBED_SLOT"
_held = []


def slot():
    """This run's slot: GPUOPS_TESTBED_SLOT when set (by a parent run, or by hand), else the first free one, leased
    for the life of this process."""
    if os.environ.get(ENV):
        value = os.environ[ENV]
        if not value.isdigit() or not 0 <= int(value) < SLOTS:
            raise ValueError("%s=%r: a slot 0-%d" % (ENV, value, SLOTS - 1))
        return int(value)
    if _held:
        return _held[0][0]
    try:
        os.makedirs(LEASES, exist_ok=True)
    except OSError:  # not root: no namespaces to make either; names and addresses of slot 0 for what needs none
        return 0
    for number in range(SLOTS):
        handle = open(os.path.join(LEASES, "slot-%d.lock" % number), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _held.append((number, handle))
        os.environ[ENV] = str(number)
        return number
    raise RuntimeError("all %d test-bed slots are in use (%s/slot-*.lock): %d test runs at once" % (
        SLOTS, LEASES, SLOTS))


def name(prefix):
    """``prefix`` with this run's slot letter."""
    return prefix + "abcdefgh"[slot()]


def net(octet):
    """The first three octets of this run's /24 number ``octet`` (0-63), e.g. "198.18.140" for octet 12 in slot 2."""
    if not 0 <= int(octet) < OCTETS:
        raise ValueError("octet %r: 0-%d (each slot has %d /24s)" % (octet, OCTETS - 1, OCTETS))
    number = slot()
    return "198.%d.%d" % (18 + number // 4, (number % 4) * OCTETS + int(octet))
