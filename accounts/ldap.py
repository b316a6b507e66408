"""LDAP sign-in (docs/admin/sign-in.md, "LDAP"): django-auth-ldap binds as the user signing in, with their DN from
PAI_LDAP_USER_DN_TEMPLATE and the password they typed, so a wrong password or a name the
directory does not know is refused by the directory itself. Nothing of the password is kept: a
user it creates gets an unusable Django password. At each sign-in their name and email are
copied from the directory and their groups (each group's cn under PAI_LDAP_GROUP_SEARCH_BASE,
read as that user) mirrored by accounts.groups.set_directory_groups, admin rights included."""

from __future__ import annotations

import logging
from typing import Any

import ldap
from django.conf import settings
from django_auth_ldap.backend import LDAPBackend
from django_auth_ldap.config import GroupOfNamesType, GroupOfUniqueNamesType, LDAPSearch, PosixGroupType

from accounts.groups import account_of, set_directory_groups
from accounts.models import Account

logger = logging.getLogger(__name__)

# PAI_LDAP_GROUP_TYPE -> the group's django-auth-ldap type and the filter that finds such groups.
GROUP_TYPES: dict[str, tuple[type, str]] = {
    "groupOfNames": (GroupOfNamesType, "(objectClass=groupOfNames)"),
    "groupOfUniqueNames": (GroupOfUniqueNamesType, "(objectClass=groupOfUniqueNames)"),
    "posixGroup": (PosixGroupType, "(objectClass=posixGroup)"),
}
USER_ATTR_MAP = {"email": "mail", "first_name": "givenName", "last_name": "sn"}


def ldap_settings() -> dict[str, Any]:
    """django-auth-ldap's settings (names without AUTH_LDAP_) from the portal's PAI_LDAP_* ones."""
    timeout = float(settings.PAI_LDAP_TIMEOUT_SECONDS)
    group_type, group_filter = GROUP_TYPES[settings.PAI_LDAP_GROUP_TYPE]
    base = settings.PAI_LDAP_GROUP_SEARCH_BASE
    return {
        "SERVER_URI": settings.PAI_LDAP_URI,
        "USER_DN_TEMPLATE": settings.PAI_LDAP_USER_DN_TEMPLATE,
        "BIND_AS_AUTHENTICATING_USER": True,
        "START_TLS": settings.PAI_LDAP_START_TLS,
        "USER_ATTR_MAP": USER_ATTR_MAP,
        "GROUP_SEARCH": LDAPSearch(base, ldap.SCOPE_SUBTREE, group_filter) if base else None,
        "GROUP_TYPE": group_type(name_attr="cn") if base else None,
        "REQUIRE_GROUP": settings.PAI_LDAP_REQUIRE_GROUP or None,
        # A directory that does not answer refuses the sign-in after this long instead of holding it.
        "CONNECTION_OPTIONS": {
            ldap.OPT_NETWORK_TIMEOUT: timeout,
            ldap.OPT_TIMEOUT: timeout,
            ldap.OPT_REFERRALS: 0,
        },
        "CACHE_TIMEOUT": 0,  # groups read afresh at each sign-in
        # accounts.groups mirrors the groups (keeping those given by hand), not django-auth-ldap.
        "MIRROR_GROUPS": None,
        "MIRROR_GROUPS_EXCEPT": None,
    }


class PortalLDAPBackend(LDAPBackend):
    """django-auth-ldap configured from the PAI_LDAP_* settings, mirroring groups at each sign-in."""

    @property
    def default_settings(self) -> dict[str, Any]:
        return ldap_settings()

    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[Any, bool]:
        user, built = super().get_or_build_user(username, ldap_user)
        if not built and user.has_usable_password():
            # A local account (it has a portal password) is never taken over by a directory entry
            # of the same name: that name signs in with its own password (ModelBackend).
            raise ldap_user.AuthenticationFailed(f"{user.get_username()} is a local account")
        if not built and account_of(user).source == Account.Source.OIDC:
            # Nor is a user of the OpenID provider (both may be configured): each directory its own.
            raise ldap_user.AuthenticationFailed(f"{user.get_username()} signs in with OpenID Connect")
        return user, built

    def authenticate_ldap_user(self, ldap_user: Any, password: str) -> Any:
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is None:
            return None
        if not user.is_active:  # as ModelBackend: a deactivated account stays out
            logger.info("LDAP sign-in of %s refused: the account is deactivated", user.get_username())
            return None
        if self.settings.GROUP_SEARCH is None:
            account = account_of(user)
            account.source = Account.Source.LDAP
            account.save(update_fields=["source"])
            return user
        try:
            names = ldap_user.group_names
        except ldap.LDAPError as error:
            # Signing in with the groups of last time could keep a right the directory took away.
            logger.warning("LDAP sign-in of %s refused: its groups could not be read (%s)", user.get_username(), error)
            return None
        set_directory_groups(user, sorted(names), Account.Source.LDAP)
        return user
