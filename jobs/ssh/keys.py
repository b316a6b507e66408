"""The per-job SSH key pair: made at submit, private half encrypted at rest (jobs.crypto)."""

from __future__ import annotations

from jobs.crypto import decrypt_text, encrypt_text
from jobs.models import Job


def generate_job_keypair(comment: str = "") -> tuple[str, str]:
    """A fresh ed25519 key pair as (public key line, private key in OpenSSH format)."""
    import asyncssh  # (here: every Django start imports this module, through jobs.actions)

    key = asyncssh.generate_private_key("ssh-ed25519", comment=comment or None)
    public = key.export_public_key("openssh").decode().strip()
    private = key.export_private_key("openssh").decode()
    return public, private


def attach_new_keypair(job: Job) -> None:
    """Give the job its own key pair; does not save, so submit_job can call it in its transaction."""
    public, private = generate_job_keypair(comment=f"pai-job-{job.name}")
    job.ssh_public_key = public
    job.ssh_private_key_encrypted = encrypt_text(private)


def job_private_key(job: Job) -> str:
    """The job's private key in OpenSSH format ("" when the job has none)."""
    return decrypt_text(job.ssh_private_key_encrypted)


def key_filename(job: Job) -> str:
    """What the downloaded key is called, and what the connect command refers to."""
    return f"{job.name}.key"
