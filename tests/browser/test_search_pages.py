"""An adaptive search's state on its sweep's page in real Chromium (issue 47): trials made of the
total, done, under way, pruned and failed, the best run so far linked; at 390 px in English and
zh-Hans nothing wider than the screen and every target 44 px, no English left in Chinese."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from catalogue import Message
from jobs.models import Job, JobState, Sweep
from jobs.sweeps import runs, submit_sweep
from tests.browser.english import english_on
from tests.browser.pages import in_language
from tests.browser.test_phone_fit import SMALL_TARGETS_JS, TAP, WIDER_THAN_SCREEN_JS
from tests.experiments.test_adaptive_search import GRID4, finish, search_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def hunt(user) -> Sweep:
    """A grid search of 4 trials, 2 made: the first done (loss 1 + (x - 2)^2), the second pruned."""
    sweep = submit_sweep(user, search_text(GRID4))
    done, pruned = runs(sweep)
    finish(done, [5.0, (done.sweep_values["x"] - 2) ** 2 + 1])
    why = Message.of(
        "exit.stopped_because", why=Message.of("exit.stop.pruned_median", step=2, metric="loss", value="9", median="1")
    )
    Job.objects.filter(pk=pruned.pk).update(state=JobState.STOPPED, exit_diagnostics_message=why.as_dict())
    return sweep


def test_the_page_counts_the_trials_and_links_the_best_so_far(page, login, hunt):
    login()
    page.goto(f"/sweeps/{hunt.full_name}/")

    expect(page.locator("[data-search-trials]")).to_have_text("2 of 4 made")
    expect(page.locator("[data-search-done]")).to_have_text("1")
    expect(page.locator("[data-search-pruned]")).to_have_text("1")
    page.click("[data-search-best] a")
    page.wait_for_url("**/jobs/alice~hunt-0/")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_it_fits_a_phone_with_44_px_targets(phone, login, hunt, language):
    login(on=phone)
    phone.goto(f"/sweeps/{hunt.full_name}/")
    in_language(phone, language)
    phone.wait_for_load_state("networkidle")

    assert phone.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390
    assert phone.evaluate(SMALL_TARGETS_JS, TAP) == []


def test_it_shows_no_english_in_chinese(chinese, login, hunt):
    login(on=chinese)
    chinese.goto(f"/sweeps/{hunt.full_name}/")
    chinese.wait_for_load_state("networkidle")

    expect(chinese.locator("[data-search-state] h2")).to_have_text("自适应搜索")
    assert english_on(chinese) == []
