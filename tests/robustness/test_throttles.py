"""Sign-in is throttled per account and per client address on the page and the API alike; a
forwarded-for header counts only from a configured proxy; the submit page shares the API's
submit throttle (issue 15, finding 7)."""

from __future__ import annotations

from ipaddress import ip_network

import pytest
from django.test import Client, RequestFactory
from rest_framework.request import Request
from rest_framework.test import APIClient

from accounts.throttling import LoginAccountThrottle, LoginAddressThrottle, client_address
from tests.factories import create_job, create_jobs, v2_yaml
from web.api import throttles
from web.api.throttles import ListThrottle, SubmitThrottle, charge_list_rows


@pytest.fixture
def low_login_rates(monkeypatch):
    monkeypatch.setattr(LoginAddressThrottle, "rate", "4/min", raising=False)
    monkeypatch.setattr(LoginAccountThrottle, "rate", "2/min", raising=False)


def page_login(password: str, address: str, username: str = "alice") -> int:
    response = Client(REMOTE_ADDR=address).post("/login/", {"username": username, "password": password})
    return response.status_code


def api_login(password: str, address: str = "127.0.0.1", forwarded_for: str = "", username: str = "alice") -> int:
    client = APIClient(REMOTE_ADDR=address)
    if forwarded_for:
        client.credentials(HTTP_X_FORWARDED_FOR=forwarded_for)
    body = {"username": username, "password": password}
    return client.post("/api/v2/authn/basic/login", body, format="json").status_code


def test_it_refuses_the_right_password_on_the_page_after_too_many_wrong_ones(user, low_login_rates):
    assert [page_login("wrong", f"10.0.0.{n}") for n in range(2)] == [200, 200]
    assert page_login("alice-password-1", "10.0.0.9") == 429


def test_it_throttles_the_login_page_per_client_address(user, low_login_rates):
    assert [page_login("wrong", "10.0.0.1", username=f"guess{n}") for n in range(4)] == [200] * 4
    assert page_login("alice-password-1", "10.0.0.1") == 429


def test_it_counts_page_and_api_attempts_on_one_account_together(user, low_login_rates):
    assert page_login("wrong", "10.0.0.1") == 200
    assert api_login("wrong", "10.0.0.2") == 400
    assert api_login("alice-password-1", "10.0.0.3") == 429


@pytest.mark.parametrize("variant", ["alice ", " alice", "\talice\n", "\uff41lice"])
def test_it_counts_a_padded_or_compatibility_spelling_of_the_name_against_the_account(user, low_login_rates, variant):
    assert [page_login("wrong", f"10.0.0.{n}") for n in range(2)] == [200, 200]
    assert page_login("alice-password-1", "10.0.0.8", username=variant) == 429
    assert api_login("alice-password-1", "10.0.0.9", username=variant) == 429


def test_it_keeps_names_that_differ_in_case_apart_as_the_user_model_does(user, low_login_rates):
    assert [page_login("wrong", f"10.0.0.{n}", username="ALICE") for n in range(3)] == [200, 200, 429]
    assert page_login("alice-password-1", "10.0.0.9") == 302


def test_it_signs_in_through_the_api_with_the_name_as_the_login_page_reads_it(user):
    assert api_login("alice-password-1", username="\uff41lice") == 200


def test_it_ignores_x_forwarded_for_from_an_unconfigured_proxy(user, low_login_rates):
    statuses = [api_login("wrong", forwarded_for=f"192.0.2.{n}", username=f"guess{n}") for n in range(5)]
    assert statuses == [400] * 4 + [429]


def test_it_keys_clients_behind_a_trusted_proxy_by_their_forwarded_address(user, low_login_rates, settings):
    settings.PAI_TRUSTED_PROXIES = [ip_network("127.0.0.1")]
    statuses = [api_login("wrong", forwarded_for=f"192.0.2.{n}", username=f"guess{n}") for n in range(5)]
    assert statuses == [400] * 5


def test_it_takes_the_nearest_untrusted_hop_as_the_client(settings):
    settings.PAI_TRUSTED_PROXIES = [ip_network("10.0.0.0/8")]
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 192.0.2.7, 10.1.1.1")
    assert client_address(request) == "192.0.2.7"


def test_it_shares_the_api_submit_throttle_with_the_submit_page(alice, alice_client, default_vc, monkeypatch):
    monkeypatch.setattr(SubmitThrottle, "rate", "2/min", raising=False)
    for number in range(2):
        assert alice.post("/api/v2/jobs", data=v2_yaml(f"api-{number}"), content_type="text/yaml").status_code == 202
    response = alice_client.post("/submit/", {"mode": "text", "action": "submit", "config_text": v2_yaml("page")})
    assert response.status_code == 429
    assert "Too many submits" in response.content.decode()


def test_it_keeps_one_number_per_client_however_many_requests_it_counts(user, monkeypatch):
    from django.core.cache import caches

    from tests.api.conftest import bearer_client

    monkeypatch.setattr(ListThrottle, "rate", "100000/min", raising=False)
    client = bearer_client(user)
    for _ in range(30):
        assert client.get("/api/v2/jobs").status_code == 200
    assert isinstance(caches["throttles"].get(f"throttle_list_{user.pk}"), float)


def test_it_lets_a_burst_of_the_rate_through_then_one_request_per_interval(monkeypatch, db):
    clock = [1000.0]
    throttle = LoginAddressThrottle()
    throttle.rate, (throttle.num_requests, throttle.duration) = "2/min", (2, 60)
    monkeypatch.setattr(throttle, "timer", lambda: clock[0])
    request = RequestFactory().post("/login/", REMOTE_ADDR="192.0.2.50")
    assert [throttle.allow_request(request, None) for _ in range(3)] == [True, True, False]
    assert throttle.wait() == pytest.approx(30)
    clock[0] += 30
    assert throttle.allow_request(request, None) is True
    assert throttle.allow_request(request, None) is False


def test_it_counts_a_big_list_page_as_one_request_per_thousand_rows(user, monkeypatch):
    """Issue 29: one user paging through 50,000-row answers inside the list rate held every worker."""
    monkeypatch.setattr(ListThrottle, "rate", "10/min", raising=False)
    request = Request(RequestFactory().get("/api/v2/jobs?limit=5000"))
    request.user = user
    assert ListThrottle().allow_request(request, None)  # a 2,500-row answer: 1 + 2 requests
    charge_list_rows(request, 2500)
    assert [ListThrottle().allow_request(request, None) for _ in range(8)] == [True] * 7 + [False]


def test_the_job_list_charges_the_rows_it_answers(user, monkeypatch):
    from tests.api.conftest import bearer_client

    monkeypatch.setattr(ListThrottle, "rate", "10/min", raising=False)
    monkeypatch.setattr(throttles, "ROWS_PER_LIST_REQUEST", 10)  # (25 rows at 10 a request: 2,500 at 1,000)
    create_jobs(user, (f"listed-{number}" for number in range(25)))
    client = bearer_client(user)
    assert client.get("/api/v2/jobs?limit=5000").status_code == 200  # 25 rows: 1 + 2 requests
    statuses = [client.get("/api/v2/jobs?limit=5").status_code for _ in range(8)]  # (small pages: 1 each)
    assert statuses == [200] * 7 + [429]


def test_it_counts_small_list_pages_once(user, monkeypatch):
    from tests.api.conftest import bearer_client

    monkeypatch.setattr(ListThrottle, "rate", "10/min", raising=False)
    create_job(user, "listed")
    client = bearer_client(user)
    statuses = [client.get("/api/v2/jobs?limit=5000").status_code for _ in range(11)]
    assert statuses == [200] * 10 + [429]


def test_it_counts_submits_and_lists_without_touching_the_database(user, default_vc):
    """Every submit and list is counted: in the database cache that was six queries and two write
    transactions each (SQLite's one writer), half a 1000-row list's queries (issue 49)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.api.conftest import bearer_client

    client = bearer_client(user)
    with CaptureQueriesContext(connection) as queries:
        assert client.post("/api/v2/jobs", data=v2_yaml("counted"), content_type="text/yaml").status_code == 202
        assert client.get("/api/v2/jobs?limit=5000").status_code == 200
    assert [query["sql"] for query in queries.captured_queries if "pai_cache" in query["sql"]] == []
