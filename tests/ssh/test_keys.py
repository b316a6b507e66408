"""Per-job key pairs: ed25519, made at submit, private half encrypted at rest."""

import asyncssh

from jobs.models import Job
from jobs.ssh import attach_new_keypair, generate_job_keypair, job_private_key


def test_it_generates_an_ed25519_pair_whose_halves_match():
    public, private = generate_job_keypair()
    key = asyncssh.import_private_key(private)
    assert public.startswith("ssh-ed25519 ")
    assert key.export_public_key("openssh").decode().split()[:2] == public.split()[:2]


def test_it_generates_a_different_pair_each_time():
    assert generate_job_keypair()[0] != generate_job_keypair()[0]


def test_it_attaches_a_pair_without_saving_and_stores_the_private_key_encrypted(settings):
    job = Job(name="demo")
    attach_new_keypair(job)
    assert job.pk is None
    assert job.ssh_public_key.startswith("ssh-ed25519 ")
    assert "PRIVATE KEY" not in job.ssh_private_key_encrypted
    assert job_private_key(job).startswith("-----BEGIN OPENSSH PRIVATE KEY-----")


def test_it_gives_submitted_jobs_a_key_pair(make_job):
    job = make_job()
    job.refresh_from_db()
    assert job.ssh_public_key and job_private_key(job)
