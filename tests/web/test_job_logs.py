"""The job page's log endpoints: a window that starts at a whole line and says what it left out,
the whole log as a download, any attempt's log, secrets masked, other jobs' logs out of reach."""

import json
from pathlib import Path

import pytest

from jobs.crypto import encrypt_text
from jobs.logs import masked_window
from jobs.models import TaskAttempt

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_job(user, make_job, tmp_path):
    """A running job whose one task has a log holding its secret's value."""
    job = make_job(user, "logged", state="RUNNING", secrets_encrypted=encrypt_text(json.dumps({"token": "hunter2"})))
    log = tmp_path / "worker-0.log"
    log.write_text("the token is hunter2\n" + "".join(f"line {n}\n" for n in range(1000)))
    job.tasks.update(log_path=str(log))
    return job


def test_a_window_inside_a_log_starts_after_a_line_break(logged_job, tmp_path):
    log = tmp_path / "a.log"
    log.write_text("first\nsecond\nthird\n")
    window = masked_window(logged_job, str(log), 9)
    assert (window.text, window.start, window.size) == ("third\n", 13, 19)
    assert window.truncated


def test_a_window_holding_the_whole_log_is_not_truncated(logged_job, tmp_path):
    log = tmp_path / "a.log"
    log.write_text("only\n")
    assert not masked_window(logged_job, str(log), 1024).truncated


def test_a_window_masks_the_jobs_secrets(logged_job):
    assert "hunter2" not in masked_window(logged_job, logged_job.tasks.get().log_path, 10**6).text


def test_the_tail_says_where_it_starts_and_how_big_the_log_is(alice_client, logged_job):
    size = Path(logged_job.tasks.get().log_path).stat().st_size
    response = alice_client.get(f"/jobs/{logged_job.full_name}/log?tail=100")
    assert 0 < int(response["X-Log-Start"]) < size
    assert int(response["X-Log-Size"]) == size
    assert response.content.decode().startswith("line ")


def test_it_downloads_the_whole_log_with_secrets_masked(alice_client, logged_job):
    task = logged_job.tasks.get()
    response = alice_client.get(f"/jobs/{logged_job.full_name}/log/download?log=task:{task.pk}")
    assert response["Content-Disposition"].startswith('attachment; filename="logged-worker-0-')
    text = b"".join(response.streaming_content).decode()
    assert text.startswith("the token is ******\nline 0\n")
    assert text.endswith("line 999\n")


def test_it_serves_an_earlier_attempts_log(alice_client, logged_job, tmp_path):
    earlier = tmp_path / "earlier.log"
    earlier.write_text("the first try\n")
    attempt = TaskAttempt.objects.create(
        job=logged_job, job_attempt=1, role="worker", index=0, attempt=1, exit_code=255, log_path=str(earlier)
    )
    text = alice_client.get(f"/jobs/{logged_job.full_name}/log?log=attempt:{attempt.pk}").content.decode()
    assert text == "the first try\n"


def test_it_answers_404_for_a_log_of_another_job(alice_client, user, logged_job, make_job):
    other = make_job(user, "other")
    foreign_task = other.tasks.get()
    assert alice_client.get(f"/jobs/{logged_job.full_name}/log?log=task:{foreign_task.pk}").status_code == 404
    assert alice_client.get(f"/jobs/{logged_job.full_name}/log/download?log=task:{foreign_task.pk}").status_code == 404


@pytest.fixture
def streamed_job(logged_job, tmp_path):
    """The task's log written as the executors write it: all, stdout and stderr beside it."""
    log = Path(logged_job.tasks.get().log_path)
    log.write_text("out\nthe token is hunter2\n")
    log.with_suffix(".stdout.log").write_text("out\n")
    log.with_suffix(".stderr.log").write_text("the token is hunter2\n")
    return logged_job


@pytest.mark.parametrize(
    ("stream", "text"),
    [("stdout", "out\n"), ("stderr", "the token is ******\n"), ("all", "out\nthe token is ******\n")],
)
def test_it_shows_one_stream_of_the_log(alice_client, streamed_job, stream, text):
    assert alice_client.get(f"/jobs/{streamed_job.full_name}/log?stream={stream}").content.decode() == text


def test_it_downloads_one_stream_masked_under_its_own_name(alice_client, streamed_job):
    task = streamed_job.tasks.get()
    response = alice_client.get(f"/jobs/{streamed_job.full_name}/log/download?log=task:{task.pk}&stream=stderr")
    assert response["Content-Disposition"].endswith('.stderr.log"')
    assert b"".join(response.streaming_content) == b"the token is ******\n"


def test_it_shows_the_whole_log_for_an_unknown_stream(alice_client, streamed_job):
    assert alice_client.get(f"/jobs/{streamed_job.full_name}/log?stream=../etc").content.decode().startswith("out\n")


def test_the_page_offers_the_three_streams(alice_client, streamed_job):
    page = alice_client.get(f"/jobs/{streamed_job.full_name}/?stream=stderr").content.decode()
    assert '<option value="stderr" selected>' in page
    assert "one stream" not in page


@pytest.fixture
def big_log_job(logged_job):
    """754 lines, about 150 KB (more than the page's 64 KB), `checkpoint` on 12 of them, most early."""
    lines = [f"step {n} " + "x" * 200 for n in range(754)]
    for n in (3, 50, 90, 120, 200, 260, 300, 333, 400, 450, 480, 753):
        lines[n] = f"step {n} saved checkpoint epoch-{n}"
    Path(logged_job.tasks.get().log_path).write_text("\n".join(lines) + "\n")
    return logged_job


def test_it_searches_the_whole_log_not_only_its_end(alice_client, big_log_job):
    """Issue 36: the page searched its 64 KB window: "0 of 754 lines" for a word the log had 12 times."""
    data = alice_client.get(f"/jobs/{big_log_job.full_name}/log/search?q=CHECKPOINT").json()
    assert (data["matched"], data["lines"], data["capped"]) == (12, 754, False)
    assert data["matches"][0] == {"line": 4, "text": "step 3 saved checkpoint epoch-3"}
    assert data["matches"][-1]["line"] == 754


def test_it_caps_the_lines_a_search_returns_and_says_so(alice_client, big_log_job, settings):
    settings.PAI_LOG_SEARCH_MAX_MATCHES = 5
    data = alice_client.get(f"/jobs/{big_log_job.full_name}/log/search?q=checkpoint").json()
    assert (len(data["matches"]), data["matched"], data["capped"]) == (5, 12, True)


def test_a_search_does_not_find_a_secret_by_its_value(alice_client, logged_job):
    data = alice_client.get(f"/jobs/{logged_job.full_name}/log/search?q=hunter2").json()
    assert data["matched"] == 0
    assert alice_client.get(f"/jobs/{logged_job.full_name}/log/search?q=token").json()["matches"] == [
        {"line": 1, "text": "the token is ******"}
    ]


@pytest.mark.parametrize("query", ["", "   ", "x" * 201])
def test_it_refuses_an_empty_or_overlong_search_naming_the_field(alice_client, logged_job, query):
    response = alice_client.get(f"/jobs/{logged_job.full_name}/log/search", {"q": query})
    assert response.status_code == 400
    assert response.json()["field"] == "q" and response.json()["message"].startswith("q:")


def test_it_answers_404_for_a_search_in_another_users_job(client, make_job, admin_user, tmp_path):
    from tests.factories import create_user

    other = make_job(admin_user, "theirs", state="RUNNING")
    client.force_login(create_user("mallory"))
    assert client.get(f"/jobs/{other.full_name}/log/search?q=a").status_code == 404


def test_it_answers_the_lines_around_a_line_of_the_whole_log(alice_client, big_log_job):
    data = alice_client.get(f"/jobs/{big_log_job.full_name}/log/lines?around=51").json()
    assert (data["around"], data["last"]) == (51, False)
    assert [found["line"] for found in data["lines"]] == list(range(11, 92))
    assert data["lines"][40] == {"line": 51, "text": "step 50 saved checkpoint epoch-50"}


def test_the_lines_around_the_first_and_the_last_line_stop_at_the_logs_ends_masked(alice_client, logged_job):
    first = alice_client.get(f"/jobs/{logged_job.full_name}/log/lines?around=1").json()
    assert first["lines"][0] == {"line": 1, "text": "the token is ******"} and len(first["lines"]) == 41
    last = alice_client.get(f"/jobs/{logged_job.full_name}/log/lines?around=1001").json()
    assert last["last"] and [found["line"] for found in last["lines"]] == list(range(961, 1002))


@pytest.mark.parametrize("around", ["", "0", "-3", "x", "1e3"])
def test_it_refuses_lines_around_no_line_naming_the_field(alice_client, logged_job, around):
    response = alice_client.get(f"/jobs/{logged_job.full_name}/log/lines", {"around": around})
    assert response.status_code == 400 and response.json()["field"] == "around"


def test_it_answers_404_for_the_lines_of_another_users_job(client, make_job, admin_user):
    from tests.factories import create_user

    other = make_job(admin_user, "theirs", state="RUNNING")
    client.force_login(create_user("mallory"))
    assert client.get(f"/jobs/{other.full_name}/log/lines?around=1").status_code == 404
