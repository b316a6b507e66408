"""The sweep pages and routes, server side: submitted from the page's YAML box and the API, the
runs table sorted and filtered, stop all and resubmit asking first, another user's sweep hidden."""

import pytest
from django.urls import reverse

from catalogue import Message
from jobs.models import JobState
from jobs.sweeps import runs, submit_sweep
from tests.factories import default_image

GRID = f"""protocolVersion: 2
name: lrs
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
parameters: {{lr: 1}}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: ["echo <% $parameters.lr %> <% $parameters.seed %>"]
extras:
  sweep: {{grid: {{lr: [0.1, 0.01, 0.001], seed: [1, 2]}}, maxConcurrent: 2}}
"""


@pytest.fixture
def sweep(user, default_vc):
    return submit_sweep(user, GRID)


def test_it_submits_a_sweep_from_the_yaml_box_and_shows_its_page(client, user, default_vc):
    client.force_login(user)
    answer = client.post(reverse("jobs:submit"), {"mode": "text", "action": "submit", "config_text": GRID})
    assert answer.status_code == 302 and answer.url == reverse("sweeps:detail", args=["alice~lrs"])
    page = client.get(answer.url).content.decode()
    assert page.count("data-run=") == 6 and "lrs-5" in page


def test_it_sorts_the_runs_by_a_parameter_and_filters_them_by_value(client, user, sweep):
    client.force_login(user)
    page = client.get(reverse("sweeps:detail", args=[sweep.full_name]), {"sort": "-lr", "q": "seed=2"}).content.decode()
    assert [line.split('"')[1] for line in page.splitlines() if "data-run=" in line] == ["lrs-1", "lrs-3", "lrs-5"]


def test_it_submits_a_sweep_through_the_api(client, user, default_vc):
    client.force_login(user)
    answer = client.post("/api/v2/jobs", GRID, content_type="text/yaml")
    assert answer.status_code == 202 and answer.json()["sweep"] == "alice~lrs"
    detail = client.get("/api/v2/sweeps/alice~lrs").json()
    assert detail["runs"] == 6 and detail["maxConcurrent"] == 2
    assert [run["values"] for run in detail["runList"][:2]] == [{"lr": 0.1, "seed": 1}, {"lr": 0.1, "seed": 2}]


def test_it_refuses_a_bad_sweep_in_the_api_naming_the_field(client, user, default_vc):
    client.force_login(user)
    answer = client.post("/api/v2/jobs", GRID.replace("maxConcurrent: 2", "maxConcurrent: 0"), content_type="text/yaml")
    assert answer.status_code == 400
    assert "extras.sweep.maxConcurrent" in answer.content.decode()


def test_it_asks_before_stopping_every_run_then_stops_them(client, user, sweep):
    client.force_login(user)
    assert "Stop the runs" in client.get(reverse("sweeps:stop", args=[sweep.full_name])).content.decode()
    client.post(reverse("sweeps:stop", args=[sweep.full_name]))
    assert set(runs(sweep).values_list("ending_cause", flat=True)) == {"stop"}


def test_it_hides_another_users_sweep(client, other_user, sweep):
    client.force_login(other_user)
    assert client.get(reverse("sweeps:detail", args=[sweep.full_name])).status_code == 404
    assert client.get("/api/v2/sweeps/alice~lrs").status_code == 404
    assert client.post("/api/v2/sweeps/alice~lrs/stop").status_code == 404
    assert JobState.WAITING in runs(sweep).values_list("state", flat=True)


def test_it_links_a_run_to_its_sweep(client, user, sweep):
    client.force_login(user)
    page = client.get(reverse("jobs:detail", args=["alice~lrs-3"])).content.decode()
    assert reverse("sweeps:detail", args=["alice~lrs"]) in page and "lr=0.01" in page


def test_it_says_a_sweeps_size_in_chinese():
    from jobs.protocol import JobConfigError
    from jobs.protocol.sweeps import plan
    from web.texts import translated

    grid = {f"p{i}": list(range(10)) for i in range(12)}
    with pytest.raises(JobConfigError) as refused:
        plan({"extras": {"sweep": {"grid": grid}}})
    [(field, message)] = refused.value.errors
    assert (field, message.code) == ("extras.sweep.grid", "config.sweep.runs")
    assert translated(message, "zh-hans") == "1000000000000 次运行，最多 10000 次"  # noqa: RUF001


def test_it_says_a_refused_run_in_chinese_its_own_message_translated_inside():
    from web.texts import translated

    run = Message.of(
        "config.sweep.run", run="lrs-1", values="lr=0.01, seed=2", message=Message.of("config.vc_unknown", name="gpu")
    )
    assert run.text == 'run lrs-1 (lr=0.01, seed=2): virtual cluster "gpu" does not exist'
    assert translated(run, "zh-hans") == '运行 lrs-1（lr=0.01, seed=2）：虚拟集群 "gpu" 不存在'  # noqa: RUF001
