"""The docs site's structure, cheaply (the full strict build is CI's ``bash .ci/docs``).

- mkdocs.yml's nav lists every Markdown page under docs/, and every page it lists exists;
- every image a page shows exists (relative to the page) and is commit-sized (< 200 KB);
- every ``::: dotted.path`` of the API reference names an object that ``import`` finds
  (a renamed function fails here, not only in the docs build).

Reading mkdocs.yml needs PyYAML, which the docs extra (mkdocs) installs; without it the
file is skipped (``.ci/docs`` runs it after installing the extra).
"""
import importlib
import importlib.util
import pathlib
import re

import pytest

yaml = pytest.importorskip(
    "yaml", reason="PyYAML reads mkdocs.yml; it comes with the docs extra: "
                   "pip install -e \".[docs]\" (bash .ci/docs runs this file)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MAX_IMAGE_BYTES = 200 * 1024
_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)|<img\s[^>]*src=\"([^\"]+)\"")
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)


def _config():
    # mkdocs.yml may hold !!python/name tags (not ours today): accept them unresolved
    class Loader(yaml.SafeLoader):
        pass
    Loader.add_multi_constructor("tag:yaml.org,2002:python/",
                                 lambda loader, suffix, node: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)


def _nav_pages(nav):
    """Every page path of a nav tree (lists of str or {title: str | list})."""
    for item in nav:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                if isinstance(value, str):
                    if "://" not in value:
                        yield value
                else:
                    yield from _nav_pages(value)


def _pages():
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def test_config_points_at_docs():
    cfg = _config()
    assert cfg.get("docs_dir", "docs") == "docs"
    assert cfg.get("strict") is True, "mkdocs.yml: strict: true (warnings are errors)"


def test_nav_lists_every_page_and_only_existing_ones():
    listed = list(_nav_pages(_config()["nav"]))
    missing_files = sorted(p for p in listed if not (DOCS / p).is_file())
    assert not missing_files, f"mkdocs.yml nav lists pages that do not exist: {missing_files}"
    duplicates = sorted({p for p in listed if listed.count(p) > 1})
    assert not duplicates, f"mkdocs.yml nav lists pages twice: {duplicates}"
    not_listed = sorted(set(_pages()) - set(listed))
    assert not not_listed, f"pages under docs/ missing from mkdocs.yml's nav: {not_listed}"


def test_required_tutorials_are_in_the_nav():
    listed = set(_nav_pages(_config()["nav"]))
    for page in ("index.md", "architecture.md", "development.md", "reference/index.md",
                 *(f"tutorials/{t}.md" for t in ("numpy", "gradients", "jit", "training",
                                                  "mxnet", "gpu", "distributed", "testing"))):
        assert page in listed, page


def _images():
    for page in _pages():
        text = (DOCS / page).read_text()
        for m in _IMAGE.finditer(text):
            src = m.group(1) or m.group(2)
            if "://" not in src and not src.startswith("data:"):
                yield page, src


def test_every_image_exists_and_is_commit_sized():
    images = list(_images())
    assert images, "no page shows an image: the pattern is broken"
    for page, src in images:
        path = (DOCS / page).parent / src.split("#")[0]
        assert path.is_file(), f"docs/{page} shows {src}, which does not exist ({path})"
        size = path.stat().st_size
        assert size < MAX_IMAGE_BYTES, f"{path}: {size} bytes (limit {MAX_IMAGE_BYTES})"


def test_image_pattern_finds_markdown_and_html_images():
    text = '![a](x/y.png) and <img alt="b" src="z.png"> but not [c](d.md)'
    assert [m.group(1) or m.group(2) for m in _IMAGE.finditer(text)] == ["x/y.png", "z.png"]


def _resolve(dotted):
    """The object at ``dotted``: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as e:
            if e.name and not dotted.startswith(e.name):
                raise                  # a missing dependency, not a missing module
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_reference_directives_name_real_objects():
    directives = [(page, m.group(1)) for page in _pages() if page.startswith("reference/")
                  for m in _DIRECTIVE.finditer((DOCS / page).read_text())]
    assert len(directives) > 20
    for page, dotted in directives:
        if dotted.startswith("minpy.scipy") and importlib.util.find_spec("scipy") is None:
            continue                   # minpy.scipy needs SciPy (the scipy extra)
        try:
            _resolve(dotted)
        except (ImportError, AttributeError) as e:
            pytest.fail(f"docs/{page}: '::: {dotted}' names nothing importable ({e!r})")
