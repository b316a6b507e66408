"""`python manage.py removenode NAME...`: unregister nodes (scripts/dev-cluster.sh down uses it).

Refused while a node holds a running task: the task would lose its node and nobody would watch it.
Finished tasks keep the node's name in their attempt history.
"""

from django.core.management.base import BaseCommand, CommandError

from clusters.models import Node
from jobs.models import TaskState


class Command(BaseCommand):
    help = "Unregister nodes that run no task."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="+", metavar="NAME")

    def handle(self, *args, **options):
        names = options["names"]
        nodes = {node.name: node for node in Node.objects.filter(name__in=names)}
        unknown = [name for name in names if name not in nodes]
        if unknown:
            raise CommandError(f"no node named {', '.join(unknown)}")
        busy = sorted(
            {
                name
                for name in Node.objects.filter(name__in=names, tasks__state=TaskState.RUNNING).values_list(
                    "name", flat=True
                )
            }
        )
        if busy:
            raise CommandError(f"{', '.join(busy)} still run tasks: stop their jobs first (or cordon the node)")
        for name in names:
            nodes[name].delete()
            self.stdout.write(f"removed node {name}")
