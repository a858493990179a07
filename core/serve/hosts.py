"""Which host names are this machine's own loopback: what ``bitextforge serve`` binds to by default
and warns about leaving. Standard library only, so that the package and its application both
import it without importing each other."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
