"""A sweep's runs compared by a training metric on its page (web/sweeps, jobs/sweep_metrics.py):
last and best values as sortable columns, the best run and its one-click resubmit, the top runs'
curves; as many queries for 1,000 runs as for 10."""

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs.models import MetricPoint, MetricSeries
from jobs.sweeps import runs, submit_sweep
from tests.conftest import rows_for_module
from tests.factories import create_user, default_image
from tests.web.test_sweep_pages import GRID


def search(samples: int) -> str:
    return f"""protocolVersion: 2
name: search-{samples}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
taskRoles:
  train:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: ["echo <% $parameters.lr %>"]
extras:
  sweep: {{random: {{samples: {samples}, seed: 1, parameters: {{lr: {{min: 0.0001, max: 0.1}}}}}}}}
"""


def report_loss(job, curve: list[float]) -> None:
    """The run's loss at steps 0.. as the sampler would have stored it."""
    task = job.tasks.get()
    MetricPoint.objects.bulk_create(
        MetricPoint(job=job, task=task, name="loss", step=step, value=value, at=0) for step, value in enumerate(curve)
    )
    MetricSeries.objects.create(
        job=job,
        name="loss",
        points=len(curve),
        last_step=len(curve) - 1,
        last_value=curve[-1],
        min_value=min(curve),
        max_value=max(curve),
    )


@pytest.fixture
def sweep(user, default_vc):
    """lrs (GRID: 6 runs): run i's loss falls from 1 to 0.1 * (i + 1) (run 0 best), run 5 none."""
    sweep = submit_sweep(user, GRID)
    for index, run in enumerate(runs(sweep)[:5]):
        report_loss(run, [1.0, 0.5, 0.1 * (index + 1) - 0.01, 0.1 * (index + 1)])
    return sweep


@pytest.fixture
def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def run_order(page: str) -> list[str]:
    return [chunk.split('"')[0] for chunk in page.split('data-run="')[1:]]


def test_it_sorts_the_runs_by_their_best_value_of_a_metric(browser, sweep):
    page = browser.get(f"/sweeps/{sweep.full_name}/", {"metric": "loss", "sort": "-metricBest"}).content.decode()

    assert run_order(page) == ["lrs-4", "lrs-3", "lrs-2", "lrs-1", "lrs-0", "lrs-5"]
    assert "loss, best" in page and "0.09" in page


def test_it_names_the_best_run_with_its_values_and_a_submit_link(browser, sweep):
    page = browser.get(f"/sweeps/{sweep.full_name}/").content.decode()

    best = page.split("data-best-run>")[1].split("</p>")[0]
    assert "lrs-0" in best and "lr=0.1" in best and f"/jobs/{sweep.owner.username}~lrs-0/clone/" in best


def test_it_submits_a_runs_values_as_a_job_of_its_own(browser, sweep):
    page = browser.get("/submit/", {"clone": f"{sweep.owner.username}~lrs-0"}).content.decode()

    assert "lrs-0-clone" in page and "sweepRun" not in page


def test_it_overlays_the_curves_of_the_top_runs_best_first(browser, sweep):
    answer = browser.get(f"/sweeps/{sweep.full_name}/curves.json", {"metric": "loss", "top": 2}).json()

    assert [run["run"] for run in answer["runs"]] == ["lrs-0", "lrs-1"]
    assert answer["runs"][0]["values"] == pytest.approx([1.0, 0.5, 0.09, 0.1])


def measured_search(owner, samples: int) -> str:
    """A search of `samples` runs, each with a loss: its full name."""
    sweep = submit_sweep(owner, search(samples))
    MetricSeries.objects.bulk_create(
        MetricSeries(job=run, name="loss", points=1, last_value=1, min_value=1, max_value=1) for run in runs(sweep)
    )
    return sweep.full_name


@pytest.fixture(scope="module")
def searches(django_db_setup, django_db_blocker):
    """erin's searches of 1,000 and of 10 measured runs, made once for the module's query counts
    (a 1,000-run submit is most of a test's CPU)."""

    def make() -> dict[int, str]:
        owner = create_user("erin")
        return {samples: measured_search(owner, samples) for samples in (1000, 10)}

    yield from rows_for_module(django_db_blocker, make)


def queries(full_name: str, page: str = "") -> int:
    """The queries the sweep's `page` (its page, `points.json`...) asks, its owner signed in."""
    browser = Client()
    browser.force_login(User.objects.get(username=full_name.split("~")[0]))
    with CaptureQueriesContext(connection) as captured:
        assert browser.get(f"/sweeps/{full_name}/{page}").status_code == 200
    return len(captured.captured_queries)


def test_it_shows_a_thousand_runs_in_as_many_queries_as_ten(db, searches):
    assert queries(searches[1000]) == queries(searches[10])


def test_it_answers_each_measured_runs_values_and_best_value_for_the_charts(browser, sweep):
    answer = browser.get(f"/sweeps/{sweep.full_name}/points.json", {"metric": "loss"}).json()

    assert answer["runs"] == ["lrs-0", "lrs-1", "lrs-2", "lrs-3", "lrs-4"]  # (lrs-5 reported none)
    assert answer["parameters"] == [{"name": "lr", "kind": "number"}, {"name": "seed", "kind": "number"}]
    assert answer["values"] == [[0.1, 0.1, 0.01, 0.01, 0.001], [1, 2, 1, 2, 1]]
    assert answer["best"] == pytest.approx([0.09, 0.19, 0.29, 0.39, 0.49])
    assert answer["runUrl"].replace("__job__", "alice~lrs-0") == f"/jobs/{sweep.owner.username}~lrs-0/"


CHOICES = GRID.replace(
    "grid: {lr: [0.1, 0.01, 0.001], seed: [1, 2]}", "grid: {opt: [sgd, adam], seed: [1], lr: [1, 2]}"
)


def test_it_puts_a_text_parameter_on_a_categorical_axis_and_leaves_out_one_that_never_varies(browser, user, default_vc):
    sweep = submit_sweep(user, CHOICES)
    for index, run in enumerate(runs(sweep)):
        report_loss(run, [1.0, 0.1 * index])
    answer = browser.get(f"/sweeps/{sweep.full_name}/points.json").json()

    # (in the stored values' key order: PostgreSQL's jsonb keeps its own)
    axes = {axis["name"]: axis for axis in answer["parameters"]}
    assert set(axes) == {"opt", "lr"}
    assert axes["opt"] == {"name": "opt", "kind": "category", "categories": ["adam", "sgd"]}
    assert answer["values"][list(axes).index("opt")] == ["sgd", "sgd", "adam", "adam"]


def test_it_hides_a_sweeps_chart_data_from_other_users(client, other_user, sweep):
    client.force_login(other_user)

    assert client.get(f"/sweeps/{sweep.full_name}/points.json").status_code == 404


def test_it_answers_a_thousand_runs_chart_data_in_as_many_queries_as_ten(db, searches):
    assert queries(searches[1000], "points.json") == queries(searches[10], "points.json")
