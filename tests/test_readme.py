"""The README's snippets run as written.

Every fenced ``bash`` line and ``python`` block of README.md is collected; each one runs in
a fresh temporary folder (the shell lines of one block share a folder, in order), unless
``SKIPPED`` names it with the reason. A new snippet therefore runs by default, and one that
stops working (a literal ``[--json]``, a file nobody has, a crash without a GPU) fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# Shell lines not run here, by prefix, and why.
SKIPPED_SHELL = {
    "python -m pip install": "installs from the network; .ci/run runs the README's install "
    "and test commands on a fresh machine",
    "pip install": "installs from the network (see above)",
    "python -m venv": "creates an environment (the development set-up)",
    "ordcore pack tokens.parquet": "packs a token file of the user's own (the bundled data has "
    "lengths, not tokens); tests/test_packing_hf.py runs ordcore pack on Parquet, JSON Lines and "
    "save_to_disk inputs",
}
# Python blocks not run here, by a string they contain, and why.
SKIPPED_PYTHON = {
    "# ordcore_reverse.py": "a file of the plugin example; tests/test_plugins.py installs and "
    "runs it (test_readme_plugin_example_runs)",
    '"reversed_raster", height=2': "needs the example plugin installed; "
    "tests/test_plugins.py::test_readme_plugin_example_runs runs it",
}


def _blocks(lang: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of every fenced block of ``lang``."""
    text = README.read_text()
    out = []
    for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M):
        out.append((text[: m.start()].count("\n") + 2, m.group(1)))
    return out


def _shell_lines() -> list[tuple[int, list[str]]]:
    """Per bash block: its line number and the command lines to run."""
    blocks = []
    for lineno, body in _blocks("bash"):
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        blocks.append((lineno, lines))
    return blocks


def _skip_reason(line: str) -> str | None:
    # `a && b`: skipped when its first command is (the install-then-run one-liners)
    first = line.split("&&")[0].strip()
    for prefix, why in SKIPPED_SHELL.items():
        if first.startswith(prefix):
            return why
    return None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)  # where the `ordcore` console script lives
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def test_readme_has_the_snippets_it_documents() -> None:
    shell = [ln for _, lines in _shell_lines() for ln in lines]
    assert any(ln.startswith("ordcore index eval") for ln in shell)
    assert len(_blocks("python")) >= 5
    assert "[--" not in " ".join(shell), "a literal [--option] fails when copied"


SHELL_BLOCKS = [b for b in _shell_lines() if any(_skip_reason(ln) is None for ln in b[1])]


@pytest.mark.parametrize(("lineno", "lines"), SHELL_BLOCKS, ids=[f"README.md:{n}" for n, _ in SHELL_BLOCKS])
def test_readme_shell_block_runs(lineno: int, lines: list[str], tmp_path: Path) -> None:
    env = _env()
    if shutil.which("ordcore", path=env["PATH"]) is None:
        pytest.skip("the ordcore console script is not installed beside this interpreter")
    for line in lines:
        if _skip_reason(line) is not None:
            continue
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
        assert proc.returncode == 0, f"README.md:{lineno}: `{line}` failed:\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, f"`{line}`:\n{proc.stderr[-2000:]}"


PYTHON_BLOCKS = [
    (n, body) for n, body in _blocks("python") if not any(key in body for key in SKIPPED_PYTHON)
]


@pytest.mark.parametrize(("lineno", "body"), PYTHON_BLOCKS, ids=[f"README.md:{n}" for n, _ in PYTHON_BLOCKS])
def test_readme_python_block_runs(lineno: int, body: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, f"README.md:{lineno} failed:\n{proc.stderr[-3000:]}"


def test_every_skip_is_still_in_the_readme() -> None:
    """A skip entry whose snippet left the README would hide nothing: remove it."""
    text = README.read_text()
    for key in SKIPPED_PYTHON:
        assert key in text, key
    shell = [ln.split("&&")[0].strip() for _, lines in _shell_lines() for ln in lines]
    for prefix in SKIPPED_SHELL:
        assert any(ln.startswith(prefix) for ln in shell), prefix
