"""The docs are a map (issue 38, item 6): a short README whose links all lead somewhere, the
methods documented under the same headings, and papers cited by title and arXiv id rather
than by files the repository does not hold."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
METHOD_HEADINGS = [
    "What it does",
    "When to use it",
    "Options",
    "Evidence",
    "Deviations from the paper",
    "Reproduction",
]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_readme_is_short_and_its_tables_are_readable() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/"
    for number, line in enumerate(lines, 1):
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            longest = max(len(cell.strip()) for cell in cells)
            assert longest <= 200, f"README.md:{number}: a table cell of {longest} characters"


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    for page in PAGES:
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in _LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} → {target}"
            assert dest.exists(), f"{where}: no such file"
            if anchor and dest.suffix == ".md":
                assert anchor in _anchors(dest), f"{where}: no such heading"


def test_papers_are_cited_not_named_by_file() -> None:
    files = [*PAGES, *sorted((ROOT / "src").rglob("*.py"))]
    for file in files:
        text = file.read_text(encoding="utf-8")
        for bad in re.findall(r"papers/\w+\.txt|SEEDS(?:\.md)?\b", text):
            raise AssertionError(
                f"{file.relative_to(ROOT)} names {bad}, which the repository does not hold: "
                'cite the paper by title and arXiv id (docs/methods.md, "References")'
            )


def test_the_methods_share_their_headings() -> None:
    text = _FENCE.sub("", (ROOT / "docs" / "methods.md").read_text(encoding="utf-8"))
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    methods = [s for s in sections if re.match(r"[^\n]*\(`(seek|rag|scope|research|auto)`", s)]
    assert len(methods) == 5
    for section in methods:
        title = section.splitlines()[0]
        headings = re.findall(r"^### (.+)$", section, re.M)
        assert headings == METHOD_HEADINGS, (title, headings)
    assert "## References" in text
    for arxiv in ("2410.04739", "2609.03395", "2603.09151"):
        assert f"https://arxiv.org/abs/{arxiv}" in text
