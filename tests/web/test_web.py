"""The browser pages over HTTP (no browser): `/`, `/static/…` and GraphiQL's page load only
files of this package, under a strict CSP, and every static file is packaged."""

from __future__ import annotations

import fnmatch
import io
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

import asyncpg

from app.demo import demo_banner
from tests.client import GraphQLClient

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "app" / "web" / "static"
VENDOR = STATIC / "vendor"
_REFERENCE = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


def _references(page: str) -> list[str]:
    return [ref for ref in _REFERENCE.findall(page) if not ref.startswith("#")]


def _assert_strict_csp(headers: Mapping[str, str]) -> None:
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp


async def test_the_messages_tab_is_served_at_the_root(client: GraphQLClient) -> None:
    page = await client.http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    _assert_strict_csp(page.headers)
    assert "<script>" not in page.text, "no inline script"
    refs = _references(page.text)
    assert "/static/js/app.js" in refs
    for ref in refs:
        assert ref.startswith("/"), f"{ref} is not on this server"
        if ref.startswith("/static/"):
            assert (await client.http.get(ref)).status_code == 200, ref


async def test_static_modules_are_served_as_javascript(client: GraphQLClient) -> None:
    for path in ("/static/js/app.js", "/static/vendor/preact/preact.js", "/static/graphiql.js"):
        response = await client.http.get(path)
        assert response.status_code == 200
        assert "javascript" in response.headers["content-type"], path
    assert (await client.http.get("/static/nothing.js")).status_code == 404


async def test_es_modules_import_only_files_of_the_package(client: GraphQLClient) -> None:
    # Static imports and re-exports (`import … from "…"`, `export … from "…"`, `import "…"`),
    # at the start of a statement: a string "from" elsewhere in the code is not an import.
    imports = re.compile(
        r"""^\s*(?:(?:import|export)\b[^;'"]*?\bfrom|import)\s*["']([^"']+)["']""", re.M
    )
    for module in [*(STATIC / "js").glob("*.js"), *(VENDOR / "preact").glob("*.js")]:
        for target in imports.findall(module.read_text()):
            assert target.startswith("./") or target.startswith("../"), (module, target)
            assert (module.parent / target).resolve().is_file(), (module, target)


async def test_graphiql_loads_nothing_from_another_host(client: GraphQLClient) -> None:
    page = await client.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    _assert_strict_csp(page.headers)
    assert "unpkg" not in page.text and "jsdelivr" not in page.text
    assert "<script>" not in page.text
    for ref in _references(page.text):
        assert ref == "/" or ref.startswith("/static/"), ref
        if ref != "/":
            assert (await client.http.get(ref)).status_code == 200, ref
    # Recall's example query, escaped into an attribute the page script reads.
    assert "query FirstLook" in page.text and "Authorization" in page.text


def test_every_vendored_library_has_its_licence_and_a_pinned_version() -> None:
    readme = (VENDOR / "README.md").read_text()
    for folder in (p for p in VENDOR.iterdir() if p.is_dir()):
        assert (folder / "LICENSE").is_file(), folder
        assert f"`{folder.name}/`" in readme, folder
    for pinned in ("preact | 11.2.0", "htm | 3.1.1", "graphiql | 3.8.3", "18.3.1"):
        assert pinned.split(" | ")[-1] in readme


def test_every_static_file_is_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["app.web"]
    for path in STATIC.rglob("*"):
        if path.is_file():
            relative = path.relative_to(STATIC.parent).as_posix()
            assert any(
                fnmatch.fnmatch(relative, p) and relative.count("/") == p.count("/")
                for p in patterns
            ), f"{relative} would not be installed"


async def test_demo_banner_prints_a_sign_in_link(db: asyncpg.Connection, tmp_path: Path) -> None:
    from app.demo import ensure_demo

    await ensure_demo(db, progress=io.StringIO())
    banner = await demo_banner(db, "127.0.0.1", 8000, tmp_path)
    link = re.search(r"http://127\.0\.0\.1:8000/#token=(rcm_\S+)", banner)
    assert link, banner
    assert "?token" not in banner


async def test_demo_banner_prints_a_stdio_config_that_works_from_any_folder(
    db: asyncpg.Connection, tmp_path: Path
) -> None:
    """Issue 33, finding 8: the configuration for `recall mcp` an MCP client needs, with the
    command and the embedded data folder absolute (a desktop client starts it anywhere)."""
    from app.demo import ensure_demo

    await ensure_demo(db, progress=io.StringIO())
    relative = Path(os.path.relpath(tmp_path))
    banner = await demo_banner(db, "127.0.0.1", 8000, relative)
    [line] = [x for x in banner.splitlines() if '"mcpServers"' in x]
    server = json.loads(line)["mcpServers"]["recall"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()
    assert server["args"] == ["mcp"]
    assert server["env"]["RECALL_DATA_DIR"] == str(tmp_path.resolve())
    assert server["env"]["RECALL_TOKEN"].startswith("rca_")
    external = await demo_banner(db, "127.0.0.1", 8000, relative, external_database=True)
    [line] = [x for x in external.splitlines() if '"mcpServers"' in x]
    assert set(json.loads(line)["mcpServers"]["recall"]["env"]) == {"RECALL_TOKEN", "DATABASE_URL"}
