"""The docs' screenshots are rewritten only when the picture changed meaningfully (tests/browser/screenshots.py)."""

from __future__ import annotations

import pytest

from tests.browser.screenshots import keep_if_changed

pytestmark = pytest.mark.browser

PAGE = """<body style="margin:0;background:{background};font:16px sans-serif">
<div style="width:800px;height:600px;padding:20px"><h1>Jobs</h1><p>{when}</p>
<table>{rows}</table></div></body>"""
ROWS = "".join(f"<tr><td>alice~train-{i}</td><td>Running</td><td>4 GPUs</td></tr>" for i in range(20))


def picture(browser, background: str = "white", when: str = "started 3 seconds ago") -> bytes:
    page = browser.new_page(viewport={"width": 840, "height": 640})
    try:
        page.set_content(PAGE.format(background=background, when=when, rows=ROWS))
        return page.screenshot(full_page=True)
    finally:
        page.close()


def test_it_keeps_the_docs_picture_when_only_a_time_on_the_page_moved(browser, tmp_path):
    kept, before = tmp_path / "job-list.png", picture(browser)
    kept.write_bytes(before)
    assert not keep_if_changed(browser, picture(browser, when="started 9 seconds ago"), kept)
    assert kept.read_bytes() == before


def test_it_replaces_the_docs_picture_when_the_page_changed(browser, tmp_path):
    kept = tmp_path / "job-list.png"
    kept.write_bytes(picture(browser))
    changed = picture(browser, background="#203040")
    assert keep_if_changed(browser, changed, kept)
    assert kept.read_bytes() == changed


def test_it_writes_a_docs_picture_that_is_not_there_yet(browser, tmp_path):
    kept = tmp_path / "new" / "sweep.png"
    assert keep_if_changed(browser, picture(browser), kept)
    assert kept.is_file()
