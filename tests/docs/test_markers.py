"""No example in the README or the guides goes untested: every code block there is fenced and
carries a marker (tests/docs/blocks.py), of a kind tests/docs/test_examples.py runs or checks, or
`output` for what something prints. A block added without one fails here, naming it."""

import markdown  # type: ignore[import-untyped]
import pytest

from tests.docs.blocks import GUIDES, ROOT, blocks_of, guide_blocks

# As mkdocs.yml renders the pages.
EXTENSIONS = ["admonition", "attr_list", "tables", "pymdownx.superfences"]


def test_it_finds_a_marker_on_every_block_of_the_readme_and_the_guides():
    unmarked = [f"{block.where} ({block.text.splitlines()[0][:60]})" for block in guide_blocks() if block.kind is None]
    assert not unmarked, (
        "blocks with no `<!-- example: KIND -->` on the line before (a kind tests/docs/test_examples.py runs, "
        f"or `output`): {unmarked}"
    )


@pytest.mark.parametrize("path", GUIDES, ids=lambda path: str(path.relative_to(ROOT)))
def test_it_finds_every_code_block_a_guide_renders(path):
    """An indented code block has no place for a marker: it would go unrun."""
    html = markdown.markdown(path.read_text(), extensions=EXTENSIONS)
    assert html.count("<pre") == len(blocks_of(path)), "an indented code block: fence it and mark it"


@pytest.mark.parametrize("path", GUIDES, ids=lambda path: str(path.relative_to(ROOT)))
def test_it_keeps_every_marker_out_of_sight(path):
    html = markdown.markdown(path.read_text(), extensions=EXTENSIONS)
    assert "&lt;!-- example" not in html, "a marker shown as text (indented in a list?)"
