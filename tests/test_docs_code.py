"""Every ```python block in README.md and docs/**/*.md runs, and shows what it prints.

The convention (docs writers, read this):

- A page's ```python blocks run in order, top to bottom, in one fresh namespace per
  page (a later block may use what an earlier one defined, as in a tutorial), in a
  subprocess per page (working directory: an empty temporary folder) under a timeout.
  Blocks fenced as anything else (```bash, ```console, ```text, ``` ...) do not run.
- Shown output: a ```python block followed directly (blank lines only between them) by a
  ```text block must print exactly that text: the block's captured stdout is compared
  with it, line by line, trailing spaces and trailing blank lines ignored. Show values
  with print() (str is stable; a scalar's repr is not), and show only what is
  deterministic (no timings).
- A block that must not run here (it needs a GPU, or a cluster) is preceded by an HTML
  comment on the line before its fence, with the reason:
  ``<!-- skip: needs a CUDA GPU -->``. An empty reason is an error. Use it sparingly.
- A block that needs an optional package (an extra of pyproject.toml) is preceded by
  ``<!-- requires: mpi4py -->`` (comma-separated module names): it runs where they can
  be imported (the test extra installs them all) and is passed over elsewhere.
- Pages run with ``MINPY_DEVICE=cpu`` so that shown output is the CPU's on any machine,
  except a page holding the comment ``<!-- docs-test: any-device -->``, which runs on
  whatever ``import minpy`` finds (a GPU in the GPU CI job) and so shows only output that
  is the same on every device.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TIMEOUT_S = 120          # per page (a hung page); each takes 1-8 s on 2 cores

# the whole test is one subprocess per page, the same with or without a stand-in GPU
pytestmark = pytest.mark.skipif(os.environ.get("MINPY_TEST_DEVICE") == "standin",
                                reason="the pages run in subprocesses of their own; "
                                       "the CPU pass ran them")

_FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)[^\n]*$")
_SKIP = re.compile(r"^<!--\s*skip:(.*?)-->\s*$")
_REQUIRES = re.compile(r"^<!--\s*requires:(.*?)-->\s*$")
ANY_DEVICE = "<!-- docs-test: any-device -->"


def doc_pages():
    """README.md and every Markdown page under docs/, sorted."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def parse_blocks(text, name="page"):
    """The fenced blocks of a Markdown text as dicts: ``lang``, ``code``, ``line`` (the
    1-based line of the block's first code line), ``skip`` (the reason, or None),
    ``expect`` (the following ```text block's content, or None), ``requires`` (module
    names).

    Raises:
        ValueError: an unclosed fence, or a skip comment without a reason.
    """
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        ticks, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != ticks:
            j += 1
        if j == len(lines):
            raise ValueError(f"{name}:{i + 1}: a ``` fence that is never closed")
        prev = i - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        skip, requires = None, []
        if prev >= 0 and _SKIP.match(lines[prev].strip()):
            skip = _SKIP.match(lines[prev].strip()).group(1).strip()
            if not skip:
                raise ValueError(f"{name}:{prev + 1}: a skip comment must give its reason")
        if prev >= 0 and _REQUIRES.match(lines[prev].strip()):
            requires = [m.strip() for m in _REQUIRES.match(lines[prev].strip()).group(1)
                        .split(",") if m.strip()]
            if not requires:
                raise ValueError(f"{name}:{prev + 1}: a requires comment must name modules")
        blocks.append({"lang": lang, "code": "\n".join(lines[i + 1:j]) + "\n",
                       "line": i + 2, "skip": skip, "expect": None, "requires": requires})
        i = j + 1
    # a ```text block right after a ```python block is that block's expected output
    for a, b in zip(blocks, blocks[1:]):
        if a["lang"] == "python" and b["lang"] == "text":
            between = lines[a["line"] - 1 + a["code"].count("\n"):b["line"] - 2]
            if all(not s.strip() for s in between[1:]):
                a["expect"] = b["code"]
    return [b for b in blocks if b["lang"] == "python"]


# Runs in the page's subprocess: reads the blocks (JSON on stdin), runs them in order in one
# module namespace (registered as __main__, so classes a block defines pickle), and writes
# one JSON line per block: its captured stdout, or the traceback that stopped the page.
_DRIVER = textwrap.dedent(r'''
    import contextlib, importlib.util, io, json, sys, traceback, types
    page, blocks = json.load(sys.stdin)
    main = types.ModuleType("__main__")
    main.__file__ = page
    sys.modules["__main__"] = main
    results = []
    for b in blocks:
        if not all(importlib.util.find_spec(m) for m in b["requires"]):
            results.append({"line": b["line"], "stdout": None, "error": None})
            continue
        out = io.StringIO()
        code = "\n" * (b["line"] - 1) + b["code"]     # tracebacks show the page's lines
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, page, "exec"), main.__dict__)
        except BaseException:
            results.append({"line": b["line"], "stdout": out.getvalue(),
                            "error": traceback.format_exc()})
            break
        results.append({"line": b["line"], "stdout": out.getvalue(), "error": None})
    sys.__stdout__.write("\n@@RESULTS@@" + json.dumps(results) + "\n")
''')


def _norm(text):
    return "\n".join(s.rstrip() for s in text.rstrip().split("\n")).strip("\n")


def run_page(path, text, cwd):
    """Run a page's python blocks; returns a list of failure messages (empty: all good)."""
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    blocks = [b for b in parse_blocks(text, name) if b["skip"] is None]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                        if env.get("PYTHONPATH") else []))
    env.pop("MINPY_TEST_DEVICE", None)
    if ANY_DEVICE not in text:
        env["MINPY_DEVICE"] = "cpu"
    env.setdefault("MPLBACKEND", "Agg")
    try:
        proc = subprocess.run([sys.executable, "-c", _DRIVER],
                              input=json.dumps([str(path), blocks]), capture_output=True,
                              text=True, cwd=cwd, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return [f"{name}: did not finish in {TIMEOUT_S} s\n{(e.stderr or '')[-2000:]}"]
    marker = proc.stdout.rfind("@@RESULTS@@")
    if marker < 0:
        return [f"{name}: the page's process died (status {proc.returncode})\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"]
    results = json.loads(proc.stdout[marker + len("@@RESULTS@@"):])
    failures = []
    for b, r in zip(blocks, results):
        where = f"{name}:{b['line']}"
        if r["error"]:
            failures.append(f"{where}: the block raised\n{r['error']}\n"
                            f"stderr:\n{proc.stderr[-2000:]}")
        elif (r["stdout"] is not None and b["expect"] is not None
              and _norm(r["stdout"]) != _norm(b["expect"])):
            failures.append(f"{where}: the block printed\n{r['stdout']}\n"
                            f"but the page shows\n{b['expect']}")
    return failures


def _runnable(path):
    return any(b["skip"] is None for b in parse_blocks(path.read_text(), path.name))


PAGES = [p for p in doc_pages() if _runnable(p)]


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_code_runs_and_prints_what_it_shows(path, tmp_path):
    failures = run_page(path, path.read_text(), tmp_path)
    assert not failures, "\n\n".join(failures)


def test_the_pages_have_code():
    """The README and each tutorial are collected, with runnable blocks (not vacuous)."""
    names = {str(p.relative_to(ROOT)) for p in PAGES}
    assert "README.md" in names
    for page in ["numpy", "gradients", "jit", "training", "mxnet", "gpu", "distributed",
                 "testing"]:
        assert f"docs/tutorials/{page}.md" in names, page
    assert len(parse_blocks((ROOT / "README.md").read_text())) >= 6
    shown = sum(b["expect"] is not None for p in PAGES for b in parse_blocks(p.read_text()))
    assert shown >= 20, "the pages show the output of their blocks"


def test_skips_give_their_reason():
    for p in doc_pages():
        for b in parse_blocks(p.read_text(), p.name):
            assert b["skip"] is None or len(b["skip"]) > 5, (p, b["line"])
    with pytest.raises(ValueError, match="reason"):
        parse_blocks("<!-- skip: -->\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="never closed"):
        parse_blocks("```python\nx = 1\n")


def test_the_checker_fails_on_wrong_output_and_errors(tmp_path):
    """The runner catches a wrong shown output and an exception; a skipped block and one
    whose module is missing do not run; blocks of one page share a namespace, in order."""
    page = tmp_path / "page.md"
    good = ("Intro.\n\n```python\nx = 2\nprint(x + 1)\n```\n\n```text\n3\n```\n\n"
            "```bash\nexit 1\n```\n\n<!-- skip: needs a GPU -->\n"
            "```python\nraise SystemExit(3)\n```\n\n"
            "```python\nprint('x is', x)\n```\n```text\nx is 2\n```\n")
    assert run_page(page, good, tmp_path) == []
    wrong = good.replace("```text\n3\n", "```text\n4\n")
    (failure,) = run_page(page, wrong, tmp_path)
    assert "page.md:4: the block printed\n3\n" in failure and "shows\n4" in failure
    missing = good.replace("<!-- skip: needs a GPU -->", "<!-- requires: no_such_module -->")
    assert run_page(page, missing, tmp_path) == []
    present = good.replace("<!-- skip: needs a GPU -->", "<!-- requires: json -->")
    (failure,) = run_page(page, present, tmp_path)
    assert "SystemExit: 3" in failure
    raising = good.replace("print(x + 1)", "print(x + 1)\n1 / 0")
    (failure,) = run_page(page, raising, tmp_path)
    assert "ZeroDivisionError" in failure and 'page.md", line 6' in failure
