"""A real OpenLDAP directory for the LDAP sign-in tests: Debian's slapd on a free port of
127.0.0.1, its config and data generated in a temporary folder (mdb, dc=example,dc=org),
loaded with slapadd before it starts, stopped at the end of the session. Tests change group
memberships with ldapmodify as the directory's root; each test starts from the same directory.

    people (ou=people)         password: password_of(uid)
      alice-ldap   Alice Liddell, alice@example.org   in portal-users
      carol        Carol Danvers, carol@example.org   in portal-users, ml-team, vision, gpu-users
      erin         Erin Hale, erin@example.org        in portal-users, admingroup
      dave         Dave Null, dave@example.org        in nothing
    ou=groups          groupOfNames        ml-team, admingroup, portal-users
    ou=unique-groups   groupOfUniqueNames  vision
    ou=posix-groups    posixGroup          gpu-users
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require
from tests.processes import free_port, stop
from tests.ssh.conftest import chromium  # noqa: F401  (a fixture, for the sign-in page's test)

SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
SCHEMAS = Path("/etc/ldap/schema")
MODULES = Path("/usr/lib/ldap")

BASE = "dc=example,dc=org"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
UNIQUE_GROUPS = f"ou=unique-groups,{BASE}"
POSIX_GROUPS = f"ou=posix-groups,{BASE}"
ROOT_DN = f"cn=admin,{BASE}"
ROOT_PASSWORD = "directory-root-secret"
# groupOfNames and groupOfUniqueNames must have a member: every group keeps this one.
PLACEHOLDER = f"cn=placeholder,{BASE}"

PEOPLE_ROWS = {  # uid: (givenName, sn, mail)
    "alice-ldap": ("Alice", "Liddell", "alice@example.org"),
    "carol": ("Carol", "Danvers", "carol@example.org"),
    "erin": ("Erin", "Hale", "erin@example.org"),
    "dave": ("Dave", "Null", "dave@example.org"),
}
# (group DN: its members' uids) as every test finds them.
MEMBERS = {
    f"cn=ml-team,{GROUPS}": ("carol",),
    f"cn=admingroup,{GROUPS}": ("erin",),
    f"cn=portal-users,{GROUPS}": ("alice-ldap", "carol", "erin"),
    f"cn=vision,{UNIQUE_GROUPS}": ("carol",),
    f"cn=gpu-users,{POSIX_GROUPS}": ("carol",),
}


def password_of(uid: str) -> str:
    return f"{uid}-directory-pw-7"


def user_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


def ssha(password: str) -> str:
    """OpenLDAP's salted SHA-1 ({SSHA}), as slappasswd writes it."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt, usedforsecurity=False).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def group_kind(dn: str) -> tuple[str, str]:
    """(objectClass, member attribute) of a group by where it is."""
    if dn.endswith(UNIQUE_GROUPS):
        return "groupOfUniqueNames", "uniqueMember"
    if dn.endswith(POSIX_GROUPS):
        return "posixGroup", "memberUid"
    return "groupOfNames", "member"


def member_values(dn: str, uids: tuple[str, ...]) -> list[str]:
    _, attribute = group_kind(dn)
    if attribute == "memberUid":
        return list(uids)
    return [PLACEHOLDER, *(user_dn(uid) for uid in uids)]


def directory_ldif() -> str:
    entries = [
        f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n",
        *(
            f"dn: ou={ou},{BASE}\nobjectClass: organizationalUnit\nou: {ou}\n"
            for ou in ("people", "groups", "unique-groups", "posix-groups")
        ),
    ]
    for uid, (given, sn, mail) in PEOPLE_ROWS.items():
        entries.append(
            f"dn: {user_dn(uid)}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {given} {sn}\n"
            f"givenName: {given}\nsn: {sn}\nmail: {mail}\nuserPassword: {ssha(password_of(uid))}\n"
        )
    for gid, (dn, uids) in enumerate(MEMBERS.items(), start=5000):
        object_class, attribute = group_kind(dn)
        cn = dn.split(",")[0].removeprefix("cn=")
        lines = [f"dn: {dn}", f"objectClass: {object_class}", f"cn: {cn}"]
        if object_class == "posixGroup":
            lines.append(f"gidNumber: {gid}")
        lines += [f"{attribute}: {value}" for value in member_values(dn, uids)]
        entries.append("\n".join(lines) + "\n")
    return "\n".join(entries)


def slapd_conf(folder: Path) -> str:
    schemas = "".join(f"include {SCHEMAS / name}.schema\n" for name in ("core", "cosine", "inetorgperson", "nis"))
    return f"""{schemas}
pidfile {folder}/slapd.pid
argsfile {folder}/slapd.args
modulepath {MODULES}
moduleload back_mdb
database mdb
suffix "{BASE}"
rootdn "{ROOT_DN}"
rootpw {ssha(ROOT_PASSWORD)}
directory {folder}/data
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
"""


@dataclass
class Directory:
    """The running directory and what a test may do to it."""

    uri: str
    process: subprocess.Popen[bytes]
    log: Path

    def modify(self, ldif: str) -> None:
        subprocess.run(
            ["ldapmodify", "-x", "-H", self.uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD],
            input=ldif.encode(),
            check=True,
            capture_output=True,
            timeout=30,
        )

    def _change(self, operation: str, group_dn: str, uid: str) -> None:
        _, attribute = group_kind(group_dn)
        value = uid if attribute == "memberUid" else user_dn(uid)
        self.modify(f"dn: {group_dn}\nchangetype: modify\n{operation}: {attribute}\n{attribute}: {value}\n")

    def add_to_group(self, group_dn: str, uid: str) -> None:
        self._change("add", group_dn, uid)

    def remove_from_group(self, group_dn: str, uid: str) -> None:
        self._change("delete", group_dn, uid)

    def restore(self) -> None:
        """Every group's members as the module docstring says."""
        changes = []
        for dn, uids in MEMBERS.items():
            _, attribute = group_kind(dn)
            values = "".join(f"{attribute}: {value}\n" for value in member_values(dn, uids))
            changes.append(f"dn: {dn}\nchangetype: modify\nreplace: {attribute}\n{values}")
        self.modify("\n".join(changes))


def start_slapd(folder: Path, attempts: int = 3) -> Directory:
    """slapd on a port the kernel just gave out; another one if something took it meanwhile."""
    log = folder / "slapd.log"
    for _ in range(attempts):
        uri = f"ldap://127.0.0.1:{free_port()}"
        with log.open("ab") as output:
            # -d: stay in the foreground (logging nothing); stopped with SIGTERM.
            process = subprocess.Popen(
                [SLAPD, "-f", str(folder / "slapd.conf"), "-h", uri, "-d", "0"], stdout=output, stderr=output
            )
        deadline = time.monotonic() + 15
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", int(uri.rsplit(":", 1)[1])), 0.5):
                return Directory(uri, process, log)
            time.sleep(0.05)
        stop(process)
    raise RuntimeError(f"slapd did not start: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="session")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Directory]:
    require(
        Path(SLAPD).exists() and Path(SLAPADD).exists() and shutil.which("ldapmodify") is not None,
        "OpenLDAP's slapd and ldap-utils (apt-get install slapd ldap-utils)",
    )
    require(importlib.util.find_spec("ldap") is not None, "python-ldap (make venv)")
    folder = tmp_path_factory.mktemp("slapd")
    (folder / "data").mkdir()
    (folder / "slapd.conf").write_text(slapd_conf(folder))
    (folder / "directory.ldif").write_text(directory_ldif())
    subprocess.run(
        [SLAPADD, "-f", str(folder / "slapd.conf"), "-l", str(folder / "directory.ldif")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    directory = start_slapd(folder)
    yield directory
    stop(directory.process)


@pytest.fixture
def directory(slapd: Directory, settings) -> Iterator[Directory]:
    """The portal signing in with the directory (LDAP first, local accounts after it), every group
    as the module says; memberships a test changed are put back after it."""
    settings.PAI_LDAP_URI = slapd.uri
    settings.PAI_DIRECTORY_ADMIN_GROUP = "admingroup"  # the directory's admins (docs/admin/sign-in.md, "Groups")
    settings.PAI_LDAP_USER_DN_TEMPLATE = f"uid=%(user)s,{PEOPLE}"
    settings.PAI_LDAP_GROUP_SEARCH_BASE = GROUPS
    settings.PAI_LDAP_GROUP_TYPE = "groupOfNames"
    settings.PAI_LDAP_START_TLS = False
    settings.PAI_LDAP_REQUIRE_GROUP = ""
    settings.PAI_LDAP_TIMEOUT_SECONDS = 5.0
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "accounts.ldap.PortalLDAPBackend"]
    yield slapd
    slapd.restore()
