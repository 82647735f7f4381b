"""A minimal PEP 517 build backend (standard library only) for the throw-away test plugin.

It writes a pure-Python wheel holding the ``ordcore_testplugin`` package and a
``.dist-info`` with ``METADATA``, ``WHEEL``, ``entry_points.txt`` and ``RECORD``.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

NAME = "ordcore_testplugin"
DIST = "ordcore-testplugin"
VERSION = "0.0.1"
HERE = Path(__file__).resolve().parent

_FILES = {
    "METADATA": (
        f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {VERSION}\n"
        "Summary: Throw-away ordcore plugin for the test suite\n"
    ),
    "WHEEL": "Wheel-Version: 1.0\nGenerator: backend.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "entry_points.txt": f"[ordcore]\ntestplugin = {NAME}\n",
}


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):  # type: ignore[no-untyped-def]
    wheel_name = f"{NAME}-{VERSION}-py3-none-any.whl"
    dist_info = f"{NAME}-{VERSION}.dist-info"
    records = []
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w") as zf:
        for path in sorted((HERE / NAME).glob("*.py")):
            arcname = f"{NAME}/{path.name}"
            data = path.read_bytes()
            zf.writestr(arcname, data)
            records.append(_record_line(arcname, data))
        for fname, text in _FILES.items():
            arcname = f"{dist_info}/{fname}"
            data = text.encode()
            zf.writestr(arcname, data)
            records.append(_record_line(arcname, data))
        records.append(f"{dist_info}/RECORD,,")
        zf.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):  # type: ignore[no-untyped-def]
    return []
