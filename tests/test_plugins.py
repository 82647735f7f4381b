"""The plugin system: discovery through the ``ordcore`` entry-point group, the registry,
errors, environment variables and the ``plugins`` CLI.

Plugins are real distributions: the throw-away ``tests/plugin_dist`` is pip-installed into a
temporary folder, and small ``.dist-info`` folders are written on the fly for broken and
conflicting plugins (``importlib.metadata`` finds both exactly as it finds site-packages).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import ordcore
from ordcore import cli, plugins, sfc
from ordcore._builtin_plugin import SCAN_KINDS
from ordcore.errors import (
    InvalidArgumentError,
    MissingDependencyError,
    PluginConflictError,
    UnknownComponentError,
)
from ordcore.plugins import PluginLoadWarning, Registry

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIST = Path(__file__).resolve().parent / "plugin_dist"
ENV_VARS = ("ORDCORE_DISABLE_PLUGINS", "ORDCORE_LOAD_PLUGINS", "ORDCORE_TRACE_PLUGINS")


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test discovers plugins from scratch, with no plugin env var set."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    plugins.reload_plugins()
    yield
    plugins.reload_plugins()


@pytest.fixture(scope="session")
def testplugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/plugin_dist pip-installed (offline, in-tree backend) into a temporary folder."""
    target = tmp_path_factory.mktemp("testplugin-site")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
           "--no-build-isolation", "--disable-pip-version-check", "--target", str(target),
           str(PLUGIN_DIST)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (target / "ordcore_testplugin-0.0.1.dist-info" / "entry_points.txt").is_file()
    return target


def _purge(prefix: str) -> None:
    for mod in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[mod]


@pytest.fixture
def testplugin(testplugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The installed throw-away plugin, visible on sys.path for this test only."""
    _purge("ordcore_testplugin")
    monkeypatch.syspath_prepend(str(testplugin_site))
    plugins.reload_plugins()
    yield testplugin_site
    _purge("ordcore_testplugin")


def make_dist(
    site: Path, dist: str, module: str, source: str, *, ep_name: str | None = None
) -> None:
    """Write an installed-looking distribution: ``module.py`` plus its ``.dist-info``."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[ordcore]\n{ep_name or dist} = {module}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary site folder on sys.path for make_dist plugins."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for mod in set(sys.modules) - before:
        if mod.startswith("tmpplug"):
            del sys.modules[mod]


GOOD = """
from ordcore.plugins import hookimpl

@hookimpl
def ordcore_register_components(registry):
    registry.add("order", "{name}", lambda **kw: kw, description="{name}")
"""


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=full_env, check=False,
    )  # fmt: skip


# --------------------------------------------------------------------------------------
# the hook, through a real installed distribution


def test_hook_ordcore_register_components(testplugin: Path) -> None:
    """The pip-installed throw-away distribution is found through its entry point, its
    components are stamped with the plugin name and distribution version."""
    info = {p.name: p for p in ordcore.list_plugins()}
    assert info["testplugin"].status == "loaded"
    assert info["testplugin"].version == "0.0.1"
    assert info["testplugin"].distribution == "ordcore-testplugin"
    assert set(info["testplugin"].components) == {
        "order/reversed_raster", "testkind/lazy", "testkind/needs_missing"
    }  # fmt: skip
    comp = plugins.get_component("order", "reversed_raster")
    assert (comp.plugin, comp.plugin_version) == ("testplugin", "0.0.1")
    np.testing.assert_array_equal(
        ordcore.create("order", "reversed_raster", height=2, width=2), [3, 2, 1, 0]
    )
    # a "module:attr" factory is imported only when created
    assert "ordcore_testplugin.heavy" not in sys.modules
    assert [c.key for c in ordcore.list_components("testkind")] == [
        "testkind/lazy", "testkind/needs_missing"
    ]  # fmt: skip
    assert "ordcore_testplugin.heavy" not in sys.modules
    assert ordcore.create("testkind", "lazy", a=1) == {"made": True, "a": 1}
    assert "ordcore_testplugin.heavy" in sys.modules


def test_installed_plugin_in_fresh_interpreter(testplugin_site: Path) -> None:
    proc = _run(
        """
        import json, sys, ordcore
        assert "ordcore_testplugin" not in sys.modules  # discovery is lazy
        comps = ordcore.list_components("order")
        print(json.dumps([[c.key, c.plugin] for c in comps]))
        """,
        PYTHONPATH=str(testplugin_site),
    )
    assert proc.returncode == 0, proc.stderr
    assert ["order/reversed_raster", "testplugin"] in json.loads(proc.stdout)


def test_every_hookspec_has_a_test_and_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    guide = readme.split("## Writing a plugin", 1)[1].split("\n## ", 1)[0]
    specs = [
        name
        for name, fn in inspect.getmembers(plugins.HookSpecs, inspect.isfunction)
        if name.startswith("ordcore_")
    ]
    assert specs == ["ordcore_register_components"]
    for name in specs:
        assert f"test_hook_{name}" in globals(), f"hook {name} has no test_hook_{name}"
        assert name in guide, f"hook {name} is not documented in README 'Writing a plugin'"
        assert (getattr(plugins.HookSpecs, name).__doc__ or "").strip()


def test_readme_plugin_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's minimal plugin works as written (installed as a dist-info here)."""
    readme = (ROOT / "README.md").read_text()
    guide = readme.split("## Writing a plugin", 1)[1].split("\n## ", 1)[0]
    blocks = guide.split("```")
    toml = next(b for b in blocks[1::2] if b.startswith("toml"))
    code = next(b for b in blocks[1::2] if b.startswith("python") and "@hookimpl" in b)
    code = code.removeprefix("python\n")
    lines = [ln for ln in toml.splitlines()[1:] if ln.strip()] + code.splitlines()
    assert len([ln for ln in lines if ln.strip()]) < 30
    ep = toml.split("[project.entry-points.ordcore]", 1)[1].strip().splitlines()[0]
    ep_name, target = (s.strip().strip('"') for s in ep.split("=", 1))
    module = target.split(":")[0]
    assert "." not in module
    make_dist(tmp_path, "readme-plugin", module, code, ep_name=ep_name)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.reload_plugins()
    try:
        mine = [c for c in ordcore.list_components() if c.plugin == ep_name]
        assert mine, ordcore.list_plugins()
        out = ordcore.create(mine[0].kind, mine[0].name, height=3, width=4)
        assert sorted(np.asarray(out).tolist()) == list(range(12))
    finally:
        sys.modules.pop(module, None)


# --------------------------------------------------------------------------------------
# built-in components


def test_builtin_orders_are_a_plugin() -> None:
    info = ordcore.list_plugins()[0]
    assert (info.name, info.status, info.distribution) == ("ordcore", "loaded", "ordcore")
    assert info.version == importlib.metadata.version("ordcore")
    keys = {c.key for c in ordcore.list_components("order") if c.plugin == "ordcore"}
    assert keys == {f"order/{k}" for k in SCAN_KINDS}


@pytest.mark.parametrize("kind", SCAN_KINDS)
def test_builtin_order_matches_sfc(kind: str) -> None:
    got = ordcore.create("order", kind, height=5, width=7)
    np.testing.assert_array_equal(got, ordcore.sfc.scan_order(5, 7, kind))
    assert got.dtype == np.int64 and sorted(got.tolist()) == list(range(35))


def test_builtin_raster_and_column() -> None:
    np.testing.assert_array_equal(ordcore.create("order", "raster", height=2, width=3), range(6))
    np.testing.assert_array_equal(
        ordcore.create("order", "column", height=2, width=3), [0, 3, 1, 4, 2, 5]
    )


def test_import_ordcore_imports_neither_torch_nor_plugins() -> None:
    proc = _run(
        """
        import sys
        import ordcore
        from ordcore import plugins
        assert plugins._host_state is None, "discovery must be lazy"
        assert "torch" not in sys.modules
        comps = ordcore.list_components()
        plugins_ = ordcore.list_plugins()
        assert "torch" not in sys.modules, "discovery imported torch"
        assert not any(m.startswith("ordcore_torch.") and m != "ordcore_torch.plugin"
                       for m in sys.modules), sorted(m for m in sys.modules if "ordcore_torch" in m)
        print(len(comps), [p.name for p in plugins_])
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_discovery_happens_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = importlib.metadata.distributions

    def counting(**kwargs: object) -> object:
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "distributions", counting)
    assert calls == []
    ordcore.list_components()
    ordcore.list_plugins()
    plugins.get_component("order", "raster").resolve()
    with pytest.raises(UnknownComponentError):
        ordcore.create("order", "nope")
    assert calls == [{}]
    plugins.reload_plugins()
    ordcore.list_plugins()
    assert len(calls) == 2


# --------------------------------------------------------------------------------------
# errors


def test_unknown_component_is_a_keyerror_with_close_matches() -> None:
    with pytest.raises(KeyError) as info:
        ordcore.create("order", "hilbret", height=2, width=2)
    assert isinstance(info.value, UnknownComponentError)
    assert "'hilbert'" in str(info.value) and "hilbret" in str(info.value)
    with pytest.raises(UnknownComponentError, match="unknown component kind 'ordr'.*'order'"):
        ordcore.create("ordr", "hilbert")
    with pytest.raises(UnknownComponentError, match="known order components: .*raster"):
        ordcore.create("order", "zzzzzz")


def test_missing_requirement_says_what_to_install(testplugin: Path) -> None:
    comp = plugins.get_component("testkind", "needs_missing")
    assert comp.missing_requirements() == ["ordcore-no-such-distribution>=1.0"]
    with pytest.raises(MissingDependencyError, match=r"pip install 'ordcore-no-such-distribution"):
        ordcore.create("testkind", "needs_missing")
    with pytest.raises(ImportError):  # MissingDependencyError is an ImportError
        ordcore.create("testkind", "needs_missing")
    assert "ordcore_testplugin.heavy" not in sys.modules


def test_unimportable_factory_module(site: Path) -> None:
    make_dist(site, "tmpplug-lazy", "tmpplug_lazy", """
        from ordcore.plugins import hookimpl

        @hookimpl
        def ordcore_register_components(registry):
            registry.add("order", "ghost", "tmpplug_no_such_module.sub:make")
        """)  # fmt: skip
    plugins.reload_plugins()
    assert plugins.get_component("order", "ghost").plugin == "tmpplug-lazy"
    with pytest.raises(MissingDependencyError, match="pip install tmpplug_no_such_module"):
        ordcore.create("order", "ghost")


def test_broken_plugin_is_listed_and_warned_once(site: Path) -> None:
    make_dist(site, "tmpplug-broken", "tmpplug_broken", """
        raise RuntimeError("boom at import")
        """)  # fmt: skip
    make_dist(site, "tmpplug-fine", "tmpplug_fine", GOOD.format(name="fine"))
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning, match="tmpplug-broken.*boom at import") as record:
        infos = {p.name: p for p in ordcore.list_plugins()}
    assert len([w for w in record if issubclass(w.category, PluginLoadWarning)]) == 1
    assert infos["tmpplug-broken"].status == "error"
    assert infos["tmpplug-broken"].error == "RuntimeError: boom at import"
    assert infos["tmpplug-broken"].version == "1.2.3"
    assert infos["tmpplug-fine"].status == "loaded"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        assert ordcore.create("order", "fine", a=2) == {"a": 2}
        ordcore.list_plugins()
        assert "order/raster" in {c.key for c in ordcore.list_components()}


def test_plugin_exiting_at_import_does_not_end_the_host(site: Path) -> None:
    """Found by a fresh-user pass: a plugin calling parse_args() at import time exited the
    host inside list_plugins() (SystemExit is not an Exception)."""
    make_dist(site, "tmpplug-exits", "tmpplug_exits", """
        import sys
        sys.exit(2)
        """)  # fmt: skip
    make_dist(site, "tmpplug-fine2", "tmpplug_fine2", GOOD.format(name="fine2"))
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning, match="tmpplug-exits.*SystemExit"):
        infos = {p.name: p for p in ordcore.list_plugins()}
    assert infos["tmpplug-exits"].status == "error"
    assert ordcore.create("order", "fine2", a=1) == {"a": 1}


def test_factory_module_raising_at_import_is_a_plugin_import_error(site: Path) -> None:
    """Found by a fresh-user pass: a factory module raising anything but ImportError leaked
    bare, and a retry advised 'pip install' of the installed plugin."""
    (site / "tmpplug_heavy.py").write_text("raise TypeError('broken dependency')\n")
    (site / "tmpplug_half.py").write_text("import tmpplug_heavy_sub.missing_part\n")
    (site / "tmpplug_heavy_sub").mkdir()
    (site / "tmpplug_heavy_sub" / "__init__.py").write_text("")
    make_dist(site, "tmpplug-lazy2", "tmpplug_lazy2", """
        from ordcore.plugins import hookimpl

        @hookimpl
        def ordcore_register_components(registry):
            registry.add("order", "heavy", "tmpplug_heavy:make")
            registry.add("order", "half", "tmpplug_half:make")
        """)  # fmt: skip
    plugins.reload_plugins()
    for _ in range(2):  # the same error on a retry
        with pytest.raises(ordcore.PluginImportError,
                           match="'order/heavy'.*TypeError: broken dependency") as info:
            ordcore.create("order", "heavy")
        assert isinstance(info.value.__cause__, TypeError)
        assert isinstance(info.value, ImportError) and "pip install" not in str(info.value)
    # A missing submodule of an installed package is not a package to pip install either.
    with pytest.raises(ordcore.PluginImportError, match="'tmpplug_heavy_sub' is installed"):
        ordcore.create("order", "half")


def test_disabled_first_party_plugin_is_named_as_disabled(site: Path) -> None:
    """Found by a fresh-user pass: with ordcore-torch disabled, create('mixer', ...) advised
    installing it."""
    make_dist(site, "ordcore-torch", "tmpplug_fake_torch", GOOD.format(name="unused"))
    os.environ["ORDCORE_DISABLE_PLUGINS"] = "ordcore-torch"
    try:
        plugins.reload_plugins()
        with pytest.raises(ordcore.UnknownComponentError,
                           match="installed but disabled .ORDCORE_DISABLE_PLUGINS"):
            ordcore.create("mixer", "gated_deltanet")
    finally:
        del os.environ["ORDCORE_DISABLE_PLUGINS"]
        plugins.reload_plugins()


def test_broken_plugin_does_not_break_import_ordcore(site: Path) -> None:
    make_dist(site, "tmpplug-broken2", "tmpplug_broken2", "import tmpplug_not_there\n")
    proc = _run(
        """
        import ordcore
        infos = {p.name: p for p in ordcore.list_plugins()}
        print(infos["tmpplug-broken2"].status, infos["tmpplug-broken2"].error)
        """,
        PYTHONPATH=str(site),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("error ModuleNotFoundError")
    assert proc.stderr.count("PluginLoadWarning") == 1


def test_plugin_raising_in_hook_registers_nothing(site: Path) -> None:
    make_dist(site, "tmpplug-halfway", "tmpplug_halfway", """
        from ordcore.plugins import hookimpl

        @hookimpl
        def ordcore_register_components(registry):
            registry.add("order", "first", lambda **kw: kw)
            registry.add("order", "Bad Name", lambda **kw: kw)
        """)  # fmt: skip
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning, match="failed to register.*kind|name"):
        infos = {p.name: p for p in ordcore.list_plugins()}
    assert infos["tmpplug-halfway"].status == "error"
    assert "InvalidArgumentError: name: 'Bad Name'" in (infos["tmpplug-halfway"].error or "")
    assert "order/first" not in {c.key for c in ordcore.list_components()}


TWO = """
from ordcore.plugins import hookimpl

@hookimpl
def ordcore_register_components(registry):
    registry.add("order", "{name}", lambda **kw: ("{tag}", kw), description="{name}")
    registry.add("order", "{other}", lambda **kw: ("{tag}", kw), description="{other}")
"""


def test_conflict_fails_only_the_conflicting_name(site: Path) -> None:
    """Two plugins register 'order/same': creating that name raises PluginConflictError
    naming both providers; every other component (built-in, either plugin's others) works."""
    make_dist(site, "tmpplug-a", "tmpplug_a", TWO.format(name="same", other="only-a", tag="a"))
    make_dist(site, "tmpplug-b", "tmpplug_b", TWO.format(name="same", other="only-b", tag="b"))
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning) as record:
        infos = {p.name: p for p in ordcore.list_plugins()}  # listing still works
    (warning,) = [w for w in record if issubclass(w.category, PluginLoadWarning)]
    message = str(warning.message)
    assert "'order/same'" in message and "'tmpplug-a' 1.2.3" in message
    assert "raises PluginConflictError" in message and "is ignored" not in message
    # Neither provides 'order/same' any more: both are listed as in conflict, without it
    # (the first was listed as loaded with it, which a fresh-user pass found misleading).
    assert infos["tmpplug-a"].status == "conflict"
    assert infos["tmpplug-a"].components == ("order/only-a",)
    assert "'order/same' is registered by two plugins" in (infos["tmpplug-a"].error or "")
    assert infos["tmpplug-b"].status == "conflict"
    assert infos["tmpplug-b"].components == ("order/only-b",)
    with pytest.raises(PluginConflictError, match="'order/same'.*'tmpplug-a' 1.2.3.*'tmpplug-b'"):
        ordcore.create("order", "same")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # what the warning said is what happens, no more
        assert ordcore.create("order", "only-a", x=1) == ("a", {"x": 1})
        assert ordcore.create("order", "only-b", x=2) == ("b", {"x": 2})
        assert ordcore.create("order", "raster", height=1, width=2).tolist() == [0, 1]
        keys = {c.key for c in ordcore.list_components()}
    assert {"order/only-a", "order/only-b", "order/hilbert"} <= keys
    assert "order/same" not in keys  # it cannot be created, so it is not listed
    # the suggested fix works
    os.environ["ORDCORE_DISABLE_PLUGINS"] = "tmpplug-b"
    try:
        plugins.reload_plugins()
        assert ordcore.create("order", "same", x=1) == ("a", {"x": 1})
    finally:
        del os.environ["ORDCORE_DISABLE_PLUGINS"]


def test_conflict_with_a_builtin_keeps_the_builtin(site: Path) -> None:
    """A plugin re-registering a built-in name: the built-in stays (as the warning says),
    the plugin's other components register, nothing else fails."""
    make_dist(site, "tmpplug-shadow", "tmpplug_shadow",
              TWO.format(name="hilbert", other="extra", tag="s"))  # fmt: skip
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning, match="'order/hilbert'.*built-in.*is used") as record:
        infos = {p.name: p for p in ordcore.list_plugins()}
    assert len([w for w in record if issubclass(w.category, PluginLoadWarning)]) == 1
    assert infos["tmpplug-shadow"].status == "conflict"
    assert "'ordcore'" in (infos["tmpplug-shadow"].error or "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ordcore.create("order", "hilbert", height=2, width=2).tolist() == (
            sfc.scan_order(2, 2, "hilbert").tolist()
        )
        assert plugins.get_component("order", "hilbert").plugin == "ordcore"
        assert ordcore.create("order", "extra", y=3) == ("s", {"y": 3})
        assert ordcore.create("order", "snake", height=2, width=2).tolist() == [0, 1, 3, 2]
        assert "order/extra" in {c.key for c in ordcore.list_components()}


def test_plugin_duplicating_its_own_name_is_an_error(site: Path) -> None:
    make_dist(site, "tmpplug-twice", "tmpplug_twice",
              TWO.format(name="twice", other="twice", tag="t"))  # fmt: skip
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning, match="tmpplug-twice.*is ignored"):
        infos = {p.name: p for p in ordcore.list_plugins()}
    assert infos["tmpplug-twice"].status == "error"
    assert "order/twice" not in {c.key for c in ordcore.list_components()}


def _bad_entry_points(site: Path, dist: str, text: str) -> None:
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(text)


def test_malformed_entry_points_break_only_their_distribution(site: Path) -> None:
    """A line without '=' in one distribution's entry_points.txt made
    importlib.metadata.entry_points() raise (TypeError: Pair.__new__() missing ...) and
    with it every plugin and built-in. Now that distribution alone is skipped: listed as an
    error and warned about once if it declares an [ordcore] plugin, ignored otherwise."""
    _bad_entry_points(site, "tmpplug_badep", "[ordcore]\nbadep = tmpplug_badep\nbroken line\n")
    _bad_entry_points(site, "unrelated_badep", "[console_scripts]\nnot a pair\n")
    make_dist(site, "tmpplug-okay", "tmpplug_okay", GOOD.format(name="okay"))
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning, match="tmpplug_badep.*entry_points.txt") as record:
        infos = {p.name: p for p in ordcore.list_plugins()}
    assert len([w for w in record if issubclass(w.category, PluginLoadWarning)]) == 1
    assert infos["tmpplug_badep"].status == "error"
    assert "entry_points.txt" in (infos["tmpplug_badep"].error or "")
    assert "unrelated_badep" not in infos  # not an ordcore plugin: none of our business
    assert infos["tmpplug-okay"].status == "loaded"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ordcore.create("order", "okay", a=1) == {"a": 1}
        assert ordcore.create("order", "raster", height=1, width=2).tolist() == [0, 1]
        ordcore.list_plugins()


def test_malformed_entry_points_in_a_fresh_interpreter(site: Path) -> None:
    _bad_entry_points(site, "unrelated_badep2", "[console_scripts]\nnot a pair\n")
    proc = _run(
        """
        import ordcore
        print(ordcore.create("order", "raster", height=1, width=3).tolist())
        print([p.status for p in ordcore.list_plugins()][0])
        """,
        PYTHONPATH=str(site),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[0,", "1,", "2]", "loaded"]
    assert "Warning" not in proc.stderr


def test_registry_validates_arguments() -> None:
    reg = Registry("me", "1.0")
    with pytest.raises(InvalidArgumentError, match="kind"):
        reg.add("Order", "x", print)
    with pytest.raises(InvalidArgumentError, match="name"):
        reg.add("order", "", print)
    with pytest.raises(InvalidArgumentError, match="factory.*module:attr"):
        reg.add("order", "x", "no_colon")
    with pytest.raises(InvalidArgumentError, match="factory"):
        reg.add("order", "x", 42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="requires"):
        reg.add("order", "x", print, requires=(">=1",))
    reg.add("order", "x", "mod:attr", requires=["torch>=2"], description="d")
    with pytest.raises(PluginConflictError, match="'order/x' is registered twice by plugin 'me' 1.0"):
        reg.add("order", "x", print)
    (comp,) = reg.components().values()
    assert (comp.key, comp.plugin, comp.requires, comp.description) == (
        "order/x", "me", ("torch>=2",), "d"
    )  # fmt: skip


# --------------------------------------------------------------------------------------
# environment variables


@pytest.mark.parametrize("value", ["1", "true", "ALL"])
def test_disable_all_plugins(testplugin: Path, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDCORE_DISABLE_PLUGINS", value)
    plugins.reload_plugins()
    infos = {p.name: p for p in ordcore.list_plugins()}
    assert infos["testplugin"].status == "disabled"
    assert infos["ordcore"].status == "loaded"  # built-ins stay
    assert {c.plugin for c in ordcore.list_components()} == {"ordcore"}


def test_disable_some_plugins(testplugin: Path, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_dist(site, "tmpplug-keep", "tmpplug_keep", GOOD.format(name="keep"))
    # by distribution name, or by entry-point name
    for value in ("ordcore-testplugin", "testplugin, other"):
        monkeypatch.setenv("ORDCORE_DISABLE_PLUGINS", value)
        plugins.reload_plugins()
        infos = {p.name: p for p in ordcore.list_plugins()}
        assert infos["testplugin"].status == "disabled"
        assert infos["tmpplug-keep"].status == "loaded"


def test_load_plugins_allow_list(testplugin: Path, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_dist(site, "tmpplug-other", "tmpplug_other", GOOD.format(name="other"))
    monkeypatch.setenv("ORDCORE_LOAD_PLUGINS", "testplugin")
    plugins.reload_plugins()
    infos = {p.name: p for p in ordcore.list_plugins()}
    assert infos["testplugin"].status == "loaded"
    assert infos["tmpplug-other"].status == "disabled"
    assert "tmpplug_other" not in sys.modules  # never imported
    monkeypatch.setenv("ORDCORE_LOAD_PLUGINS", "")
    plugins.reload_plugins()
    assert [p.name for p in ordcore.list_plugins() if p.status == "loaded"] == ["ordcore"]


def test_trace_plugins(testplugin: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("ORDCORE_TRACE_PLUGINS", "1")
    plugins.reload_plugins()
    ordcore.list_plugins()
    err = capsys.readouterr().err
    assert "ordcore.plugins: load testplugin = ordcore_testplugin from ordcore-testplugin 0.0.1" in err
    assert "ordcore_register_components" in err  # pluggy's own hook-call trace
    assert "testplugin: registered order/reversed_raster" in err
    monkeypatch.delenv("ORDCORE_TRACE_PLUGINS")
    plugins.reload_plugins()
    ordcore.list_plugins()
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------------------
# the CLI


def test_cli_plugins(testplugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "testplugin" in out and "0.0.1" in out and "order/reversed_raster" in out
    assert "[missing: ordcore-no-such-distribution>=1.0]" in out
    assert cli.main(["plugins", "--json", "--kind", "order"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["kind"] for c in data["components"]} == {"order"}
    assert {"name": "testplugin", "version": "0.0.1", "status": "loaded"}.items() <= next(
        p for p in data["plugins"] if p["name"] == "testplugin"
    ).items()


def test_cli_reports_broken_plugin(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_dist(site, "tmpplug-cli", "tmpplug_cli", "raise ValueError('nope')\n")
    plugins.reload_plugins()
    with pytest.warns(PluginLoadWarning):
        assert cli.main(["plugins"]) == 1
    out = capsys.readouterr().out
    assert "tmpplug-cli" in out and "error" in out and "ValueError: nope" in out


def test_python_dash_m_ordcore_plugins() -> None:
    proc = subprocess.run([sys.executable, "-m", "ordcore", "plugins"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "order/hilbert" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "ordcore"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 2 and "plugins" in proc.stderr  # the help lists the commands
