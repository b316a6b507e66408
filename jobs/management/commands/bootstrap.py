"""First-start setup for `make run`: an admin user (password printed once) and the local node.

Idempotent: running it again changes nothing and prints no password.
"""

import secrets

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from clusters.executors.netns import open_tun_to_users
from clusters.executors.registry import describe_executor
from clusters.management.commands.addnode import docker_answers
from clusters.models import Node


class Command(BaseCommand):
    help = "Create the admin user (printing its generated password once) and register this machine as a node."

    def add_arguments(self, parser):
        parser.add_argument("--admin", default="admin", help="admin user name (default: admin)")

    def handle(self, *args, **options):
        User = get_user_model()
        if not User.objects.filter(username=options["admin"]).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser(options["admin"], email="", password=password)
            banner = "=" * 64
            self.stdout.write(
                f"{banner}\nAdmin user created: {options['admin']}\nPassword (shown once): {password}\n{banner}"
            )
        if note := open_tun_to_users():
            self.stdout.write(note)
        if not Node.objects.exists():
            call_command("addnode", "--local", stdout=self.stdout)
        for node in Node.objects.all():
            self.stdout.write(f"node {node.name}: {describe_executor(node.executor, node.address, node.docker_url)}")
            if node.executor == Node.Executor.PROCESS and not node.docker_url and docker_answers():
                self.stdout.write(
                    f"  a Docker engine answers now: `manage.py addnode {node.name} --local --executor docker` "
                    "moves this node to containers"
                )
