"""`createvc`'s sharing options: the queue order, the per-user GPU cap and the time limits."""

import re

import pytest
from django.core.management import CommandError, call_command

from clusters.models import VirtualCluster
from clusters.vc_admin import VirtualClusterForm


def test_it_sets_a_vcs_sharing_options_and_keeps_its_share(db):
    call_command("createvc", "team", "--share", "40")
    call_command(
        "createvc",
        "team",
        "--queue",
        "fair-share",
        "--user-gpu-limit",
        "4",
        "--default-run-minutes",
        "60",
        "--max-run-minutes",
        "1440",
    )
    vc = VirtualCluster.objects.get(name="team")
    assert (vc.share_percent, vc.queue_policy, vc.user_gpu_limit) == (40, "fair-share", 4)
    assert (vc.default_run_minutes, vc.max_run_minutes) == (60, 1440)
    call_command("createvc", "team", "--user-gpu-limit", "none")
    assert VirtualCluster.objects.get(name="team").user_gpu_limit is None


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--user-gpu-limit", "two"], "--user-gpu-limit: 'two' is not a whole number (or none)"),
        (["--max-run-minutes", "0"], "--max-run-minutes: must be at least 1 (or none)"),
        (
            ["--default-run-minutes", "90", "--max-run-minutes", "60"],
            "--default-run-minutes: must not be longer than the maximum time limit",
        ),
        (["--lending-limit", "120"], "--lending-limit: must be a percent from 0 to 100 (or none)"),
        (["--borrowing-limit", "half"], "--borrowing-limit: 'half' is not a whole percent (or none)"),
    ],
)
def test_it_refuses_a_bad_sharing_option_naming_it(db, argv, said):
    with pytest.raises(CommandError, match=re.escape(said)):
        call_command("createvc", "team", "--share", "10", *argv)


def test_it_marks_a_vc_as_lending_and_back(db):
    call_command("createvc", "team", "--share", "40", "--lends", "yes")
    assert VirtualCluster.objects.get(name="team").lends_idle_quota
    call_command("createvc", "team", "--lends", "no")
    vc = VirtualCluster.objects.get(name="team")
    assert (vc.lends_idle_quota, vc.share_percent) == (False, 40)


def test_it_sets_and_clears_a_vcs_lending_and_borrowing_limits(db):
    call_command(
        "createvc", "team", "--share", "40", "--lends", "yes", "--lending-limit", "50%", "--borrowing-limit", "0"
    )
    vc = VirtualCluster.objects.get(name="team")
    assert (vc.lending_limit_percent, vc.borrowing_limit_percent) == (50, 0)
    call_command("createvc", "team", "--lending-limit", "none")
    assert VirtualCluster.objects.get(name="team").lending_limit_percent is None


def test_it_refuses_a_lending_slurm_vc(db):
    VirtualCluster.objects.create(name="hpc", share_percent=0, slurm_partition="gpu")
    with pytest.raises(CommandError, match="--lends: a Slurm VC never lends"):
        call_command("createvc", "hpc", "--lends", "yes")


def test_it_refuses_an_unknown_borrowing_class_at_start(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from pai_portal.env import env_choices

    monkeypatch.setenv("PAI_BORROWING_CLASSES", "oppo,tset")
    with pytest.raises(ImproperlyConfigured, match=r"'tset' is not one of crit, prod, test, oppo"):
        env_choices("PAI_BORROWING_CLASSES", "oppo", ("crit", "prod", "test", "oppo"))


def form_refusal(field: str, instance: VirtualCluster | None = None, **data: str) -> str:
    """What the VC pages' and the admin's form says of `field` for VC `team` (or `instance`) with `data`."""
    fields = {"name": "team", "share_percent": "10", "queue_policy": "fifo", **data}
    form = VirtualClusterForm(data=fields, instance=instance)
    assert not form.is_valid()
    return str(form.errors[field][0])


def test_it_refuses_a_default_time_limit_over_the_longest_as_the_vc_form_does(db):
    said = form_refusal("default_run_minutes", default_run_minutes="90", max_run_minutes="60")
    with pytest.raises(CommandError, match=re.escape(f"--default-run-minutes: {said}")):
        call_command("createvc", "team", "--share", "10", "--default-run-minutes", "90", "--max-run-minutes", "60")


def test_it_refuses_a_lending_slurm_vc_as_the_vc_form_does(db):
    hpc = VirtualCluster.objects.create(name="hpc", share_percent=0, slurm_partition="gpu")
    said = form_refusal("lends_idle_quota", hpc, name="hpc", lends_idle_quota="on", slurm_partition="gpu")
    with pytest.raises(CommandError, match=re.escape(f"--lends: {said}")):
        call_command("createvc", "hpc", "--lends", "yes")


def test_it_refuses_a_new_time_limit_against_the_vcs_saved_one(db):
    call_command("createvc", "team", "--share", "10", "--max-run-minutes", "60")
    with pytest.raises(CommandError, match="--default-run-minutes: must not be longer than the maximum time limit"):
        call_command("createvc", "team", "--default-run-minutes", "90")
    assert VirtualCluster.objects.get(name="team").default_run_minutes is None
