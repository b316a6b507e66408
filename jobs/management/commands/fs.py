"""`python manage.py fs upload|ls|rm --user NAME ...`: put code and data into a user's area of
the default FS (the store behind $PAI_DEFAULT_FS_URI), list it, remove from it."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.storage import areas as storage
from jobs.storage.areas import StorageError


class Command(BaseCommand):
    help = "Manage a user's area of the portal's file store ($PAI_DEFAULT_FS_URI)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        upload = actions.add_parser("upload", help="copy a local file or directory into the user's area")
        upload.add_argument("source", help="local file or directory")
        upload.add_argument(
            "destination", nargs="?", default="", help="path in the area (default: the source's name at the top)"
        )
        listing = actions.add_parser("ls", help="list a directory of the user's area")
        listing.add_argument("path", nargs="?", default="")
        removal = actions.add_parser("rm", help="remove a file or a directory tree from the user's area")
        removal.add_argument("path")
        for sub in (upload, listing, removal):
            sub.add_argument("--user", required=True, help="the area's owner (an existing portal user)")

    def handle(self, *args: object, **options: str) -> None:
        username = options["user"]
        if not get_user_model().objects.filter(username=username).exists():
            raise CommandError(f"no such user: {username}")
        try:
            getattr(self, f"do_{options['action']}")(username, options)
        except StorageError as exc:
            raise CommandError(str(exc)) from exc

    def do_upload(self, username: str, options: dict[str, str]) -> None:
        saved = storage.copy_into(username, Path(options["source"]), options["destination"])
        area = storage.user_area(username)
        for path in saved:
            self.stdout.write(f"$PAI_DEFAULT_FS_URI/{path.relative_to(area).as_posix()}")
        self.stdout.write(self.style.SUCCESS(f"{len(saved)} file(s) uploaded for {username}"))

    def do_ls(self, username: str, options: dict[str, str]) -> None:
        for entry in storage.list_dir(username, options["path"]):
            if entry.is_dir:
                self.stdout.write(f"{'-':>12}  {entry.name}/")
            else:
                self.stdout.write(f"{entry.size:>12}  {entry.name}")

    def do_rm(self, username: str, options: dict[str, str]) -> None:
        storage.remove(username, options["path"])
        self.stdout.write(self.style.SUCCESS(f"removed {options['path']}"))
