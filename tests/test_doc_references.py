"""Every repository path and `app.…` module the prose names exists.

The prose is README.md, docs/ (not docs/results/, which keeps raw output as it was measured),
bench/README.md and examples/README.md, and the comments and docstrings of app/, tests/, bench/,
eval/ and examples/ (code itself is left to the type checker: only comments and string statements,
docstrings, are prose; they are the tokens tokenize would give, found by one regular expression
because tokenize takes seconds over the tree). In it:

- a path under one of the repository's top folders (`app/data/eligibility.py`, `migrations/`,
  `docs/scale.md`) names a file or folder, or a glob or `{a,b}` pattern that matches some;
  `migrations/027` names the migration of that number;
  `tests/test_layers.py::test_no_import_cycle_between_packages` names a test of that file;
- a dotted name under app (`app.data.lineage`, `app.data.lineage.cache_summaries`,
  `app.data.session.Session.allowed_audiences`) names a module, then optionally a name defined
  at its top level, then optionally a name defined in that class;
- a Markdown link to a file of the repository (`[x](results/semantic.json)`) names one that
  exists, and its `#anchor`, if any, a heading of that file.

Modules are found on disk (pyproject's package-dir maps `app.migrations` onto migrations/),
their names with ast: nothing is imported. All the missing references are reported at once.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_FOLDERS = ("app", "tests", "bench", "eval", "migrations", "scripts", "docs", "examples")
CODE_FOLDERS = ("app", "tests", "bench", "eval", "examples")

# A path under a top folder, not inside a longer path, a URL or a module name
# (`.venv/lib/…/app/x`, `https://host/docs/x`, `request.app/x`). A trailing `.`, `,` or `:` is
# the sentence's, not the path's.
_PATH = re.compile(
    r"(?<![\w./:~-])((?:" + "|".join(TOP_FOLDERS) + r")/(?:[\w.*/-]|\{[\w.,-]*\})*)"
    r"(?:::(\w+))?",
    re.ASCII,
)
_BRACES = re.compile(r"\{([\w.,-]*)\}")
# `app.` followed by identifiers: a module, maybe a name in it. Not part of a longer dotted
# name (`request.app.state`), a path (`web/app.py`) or a URL.
_MODULE = re.compile(r"(?<![\w./:-])app(?:\.[A-Za-z_]\w*)+", re.ASCII)
# A Markdown link or image target: a relative path, maybe with an anchor.
_LINK = re.compile(r"\]\(([^()\s#]*)(?:#([^()\s]*))?\)")
_MIGRATION = re.compile(r"migrations/(\d{3})")
# Python's comments and string literals, left to right: a `#` or a quote inside a string is
# consumed with it, so what lies between two matches is code. Over this tree it yields exactly
# tokenize's COMMENT tokens and string statements; tokenize, pure Python before 3.12, takes
# 1-4 s to read them, this 0.2-0.5 s.
_PY_LEXEME = re.compile(
    r"""(?P<comment>\#[^\n]*)
      | (?P<string>[rRbBuUfF]{0,2}
          (?: '''(?:\\.|[^\\])*?''' | \"\"\"(?:\\.|[^\\])*?\"\"\"
            | '(?:\\.|[^\\'\n])*' | "(?:\\.|[^\\"\n])*" ))""",
    re.VERBOSE | re.DOTALL,
)


def _markdown_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "examples" / "README.md"]
    files += [p for p in sorted((ROOT / "docs").rglob("*.md")) if "results" not in p.parts]
    return files


def _python_files() -> list[Path]:
    return [p for folder in CODE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]


def _python_prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and each string statement (docstrings) of a module."""
    source = path.read_text()
    depth = 0  # open brackets: a string inside them is an argument, not a statement
    line, counted = 1, 0
    for lexeme in _PY_LEXEME.finditer(source):
        code = source[counted : lexeme.start()]
        depth += sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))
        line += code.count("\n")
        counted = lexeme.end()
        text = lexeme.group()
        is_comment = lexeme.group("comment") is not None
        if is_comment or (depth == 0 and _alone_on_its_lines(source, *lexeme.span())):
            yield line, text
        line += text.count("\n")


def _alone_on_its_lines(source: str, start: int, end: int) -> bool:
    """Nothing but blanks before `start` on its line, and nothing but a comment after `end`."""
    before = source[source.rfind("\n", 0, start) + 1 : start]
    after_end = source.find("\n", end)
    after = source[end : len(source) if after_end == -1 else after_end]
    return not before.strip() and not after.split("#", 1)[0].strip()


def _markdown_prose(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text().splitlines(), 1)


@cache
def _package_dirs() -> dict[str, Path]:
    """Packages installed from another folder (pyproject's [tool.setuptools.package-dir])."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapping = pyproject["tool"]["setuptools"].get("package-dir", {})
    return {name: ROOT / folder for name, folder in mapping.items() if name}


def _module_path(parts: tuple[str, ...]) -> Path | None:
    """The file of module `parts` (a package's __init__.py, or its folder if it has none)."""
    name = ".".join(parts)
    base = _package_dirs().get(name)
    folder = base if base is not None else ROOT.joinpath(*parts)
    if (folder / "__init__.py").is_file():
        return folder / "__init__.py"
    if base is not None and base.is_dir():
        return base
    module = ROOT.joinpath(*parts[:-1], parts[-1] + ".py")
    return module if module.is_file() else None


@cache
def _names(path: Path) -> dict[str, ast.AST]:
    """The names a module defines at its top level (functions, classes, assignments, imports)."""
    if path.is_dir():
        return {}
    return _defined(ast.parse(path.read_text()).body)


def _defined(body: list[ast.stmt]) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.If | ast.Try):
            names.update(_defined(node.body))
    return names


def _module_exists(dotted: str) -> bool:
    parts = tuple(dotted.split("."))
    # The longest prefix that is a module; what follows is a name in it, then in that class.
    for end in range(len(parts), 0, -1):
        path = _module_path(parts[:end])
        if path is None:
            continue
        rest = parts[end:]
        if not rest:
            return True
        names = _names(path)
        if rest[0] not in names:
            return False
        node = names[rest[0]]
        if len(rest) == 1 or not isinstance(node, ast.ClassDef):
            return True
        return rest[1] in _defined(node.body)
    return False


def _path_exists(path: str, test: str | None) -> bool:
    path = path.rstrip(".,:;")
    if braces := _BRACES.search(path):
        head, tail = path[: braces.start()], path[braces.end() :]
        return all(_path_exists(head + part + tail, test) for part in braces.group(1).split(","))
    if any(c in path for c in "*?["):
        return any(ROOT.glob(path))
    migration = _MIGRATION.fullmatch(path)
    if migration:
        return any((ROOT / "migrations").glob(migration.group(1) + "_*.sql"))
    target = ROOT / path
    if not target.exists():
        return False
    if test is None:
        return True
    return (
        re.search(rf"^\s*(?:async )?(?:def|class) {test}\b", target.read_text(), re.M) is not None
    )


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.*)", line)):
            slug = _slug(heading.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(anchors)


def _link_exists(source: Path, target: str, anchor: str | None) -> bool:
    if re.match(r"[a-z]+:", target):  # http:, mailto: ...
        return True
    path = (source.parent / target) if target else source
    if not path.exists():
        return False
    if anchor and path.suffix == ".md":
        return anchor in _anchors(path)
    return True


def _missing_in(path: Path, text: str) -> Iterator[str]:
    """The references of one piece of prose of `path` that name nothing."""
    if path.suffix == ".md":
        for match in _LINK.finditer(text):
            if not _link_exists(path, match.group(1), match.group(2)):
                yield match.group(0)
        # A link's target is relative to its file, not to the repository.
        text = _LINK.sub("]()", text)
    for match in _PATH.finditer(text):
        if not _path_exists(match.group(1), match.group(2)):
            yield match.group(0)
    for match in _MODULE.finditer(text):
        if not _module_exists(match.group(0)):
            yield match.group(0)


def test_every_path_and_module_the_prose_names_exists() -> None:
    missing = []
    sources = [(p, _markdown_prose(p)) for p in _markdown_files()]
    sources += [(p, _python_prose(p)) for p in _python_files()]
    for path, prose in sources:
        for line, text in prose:
            missing += [f"{path.relative_to(ROOT)}:{line}: {m}" for m in _missing_in(path, text)]
    assert not missing, "named in prose but missing:\n" + "\n".join(missing)


def test_the_readme_layout_names_every_package_and_folder() -> None:
    """README's Repository layout has a line for each package of app/ and each top folder, so a
    new package fails here until it is described."""
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Repository layout") :]
    packages = [p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "app").rglob("__init__.py")]
    named = [*packages, *(f"{folder}/" for folder in TOP_FOLDERS)]
    missing = sorted(
        name for name in named if f"- `{name}`" not in layout and f"- `{name}/`" not in layout
    )
    assert not missing, "not in README's Repository layout:\n" + "\n".join(missing)


def test_the_check_tells_what_exists_from_what_does_not() -> None:
    """The check itself: each kind of reference, once naming something and once not."""
    readme = ROOT / "docs" / "scale.md"
    exists = (
        "`app/data/eligibility.py`, `migrations/`, migrations/027, `tests/test_*.py`,"
        " docs/results/bench-100k-postgres-vs-citus-{postgres,citus}.json,"
        " tests/test_layers.py::test_no_import_cycle_between_packages, app.data.lineage,"
        " app.data.lineage.cache_summaries, app.data.session.Session.allowed_audiences,"
        " app.migrations, [Rules](#rules-that-keep-sql-distributable), [api](api.md#errors),"
        " [x](https://example.com/app.nothing/docs/nothing), request.app.state, web/app.py"
    )
    assert list(_missing_in(readme, exists)) == []
    missing = (
        "app/data/changes.py, docs/plans.md., migrations/099, tests/test_nothing_*.py,"
        " docs/results/bench-{1m,nothing}.json, tests/test_layers.py::test_nothing,"
        " app.data.changes, app.data.lineage.nothing, app.data.session.Session.nothing,"
        " [x](nothing.md), [y](api.md#nothing), [z](#nothing)"
    )
    assert list(_missing_in(readme, missing)) == [
        "](nothing.md)",
        "](api.md#nothing)",
        "](#nothing)",
        "app/data/changes.py",
        "docs/plans.md.",
        "migrations/099",
        "tests/test_nothing_*.py",
        "docs/results/bench-{1m,nothing}.json",
        "tests/test_layers.py::test_nothing",
        "app.data.changes",
        "app.data.lineage.nothing",
        "app.data.session.Session.nothing",
    ]
