"""The ``ordcore`` command line (also ``python -m ordcore``).

Each subcommand is a function ``_cmd_<name>(args) -> int`` registered in :func:`build_parser`
through argparse subparsers; add new subcommands there.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="ordcore",
        description="ordcore: order, pack, rotate and search vectors for machine learning.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "plugins",
        help="list the installed plugins and their components",
        description="List the plugins found through the 'ordcore' entry-point group, their "
        "status (loaded, error, conflict, disabled), load errors and components.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--kind", default=None, help="only list components of this kind")
    p.set_defaults(func=_cmd_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        import ordcore

        print(ordcore.__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    status: int = args.func(args)
    return status


def _cmd_plugins(args: argparse.Namespace) -> int:
    from ordcore import plugins
    from ordcore.errors import PluginConflictError

    infos = plugins.list_plugins()
    try:
        comps = plugins.list_components(args.kind)
        conflict = None
    except PluginConflictError as exc:
        comps, conflict = [], str(exc)
    failed = conflict is not None or any(i.status in ("error", "conflict") for i in infos)
    if args.json:
        out = {
            "plugins": [asdict(i) for i in infos],
            "components": [
                {
                    "kind": c.kind,
                    "name": c.name,
                    "plugin": c.plugin,
                    "plugin_version": c.plugin_version,
                    "requires": list(c.requires),
                    "missing": c.missing_requirements(),
                    "description": c.description,
                }
                for c in comps
            ],
            "conflict": conflict,
        }
        print(json.dumps(out, indent=2))
        return 1 if failed else 0
    print("plugins:")
    for info in infos:
        line = f"  {info.name:<20} {info.version:<10} {info.status:<9}"
        if info.distribution and info.distribution != info.name:
            line += f" ({info.distribution})"
        print(line.rstrip())
        if info.error:
            print(f"      {info.error}")
    if conflict:
        print(f"\nconflict: {conflict}", file=sys.stderr)
    print("components:")
    for c in comps:
        missing = c.missing_requirements()
        note = f"  [missing: {', '.join(missing)}]" if missing else ""
        print(f"  {c.key:<28} {c.plugin:<14} {c.description}{note}")
    return 1 if failed else 0
