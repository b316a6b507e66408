"""Racing submits of one name: the unique constraint lets exactly one through."""

import threading

import pytest
from django.db import connection

from tests.api.conftest import bearer_client
from tests.factories import v2_yaml

SUBMITTERS = 20


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_accepts_one_of_twenty_parallel_submits_of_one_name_and_answers_409_to_the_rest(default_vc, user):
    clients = [bearer_client(user) for _ in range(SUBMITTERS)]
    start = threading.Barrier(SUBMITTERS)
    answers: list[tuple[int, str]] = []
    lock = threading.Lock()

    def submit(client) -> None:
        start.wait()
        try:
            response = client.post("/api/v2/jobs", data=v2_yaml("race"), content_type="text/yaml")
            with lock:
                answers.append((response.status_code, response.json().get("code", "")))
        finally:
            connection.close()  # each thread has its own connection; close it before the thread ends

    threads = [threading.Thread(target=submit, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [202] + [409] * (SUBMITTERS - 1), answers
    assert {code for status, code in answers if status == 409} == {"ConflictJobError"}
