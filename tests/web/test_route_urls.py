"""The top bar's addresses, reversed once (web/route_urls.py), are the ones `{% url %}` gave."""

import re
from unittest import mock

from django.test import Client
from django.urls import clear_url_caches, reverse, set_script_prefix

from web import route_urls
from web.route_urls import route_url

TOP_BAR = [
    "jobs:list", "jobs:submit", "scheduling:overview", "my_apps:list", "scheduling:dashboard", "alerts:list",
    "sweeps:list", "templates:list", "jobs_usage:report", "storage:browse", "api-docs", "people:users", "vcs:list",
    "admin:index", "set_language", "profile", "logout", "jobs_notifications:ended",
]  # fmt: skip


def test_it_gives_each_address_reverse_gives_and_reverses_it_once():
    assert [route_url(name) for name in TOP_BAR] == [reverse(name) for name in TOP_BAR]
    with mock.patch.object(route_urls, "reverse", side_effect=reverse) as reversing:
        assert [route_url(name) for name in TOP_BAR] == [reverse(name) for name in TOP_BAR]
    assert reversing.call_count == 0


def test_it_reverses_again_under_another_script_prefix_or_after_the_routes_change():
    assert route_url("jobs:submit") == "/submit/"
    set_script_prefix("/portal/")
    try:
        assert route_url("jobs:submit") == "/portal/submit/"
    finally:
        set_script_prefix("/")
    clear_url_caches()  # (as a changed ROOT_URLCONF does)
    with mock.patch.object(route_urls, "reverse", side_effect=reverse) as reversing:
        assert route_url("jobs:submit") == "/submit/"
    assert reversing.call_count == 1


def test_it_links_the_top_bar_of_a_portal_served_under_a_prefix_there(admin_user):
    client = Client()
    client.force_login(admin_user)
    plain = client.get("/profile/").content.decode()
    set_script_prefix("/portal/")  # (as the WSGI handler does for a SCRIPT_NAME; the test client does not)
    try:
        prefixed = client.get("/profile/").content.decode()
    finally:
        set_script_prefix("/")
    links = re.findall(r'(?:href|action|data-ended-jobs-url)="(/[^"]*)"', plain)
    assert {reverse(name) for name in TOP_BAR} <= set(links)
    for name in TOP_BAR:
        assert f'"/portal{reverse(name)}"' in prefixed
